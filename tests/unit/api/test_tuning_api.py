"""SpecDecodeTuning: the models and the generated CRD (its CEL run offline) refuse the same
bad specs, and accept the good ones with the defaults written once in the models."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from sdr_crd_checker import CrdChecker, apply_defaults

from localcluster.manifests import REPO as REPO_ROOT
from specdecode.api.tuning import DEFAULT_LADDER, SpecDecodeTuning, SpecDecodeTuningSpec
from specdecode.tools.crdgen import TUNING_KIND, custom_resource_definition, drift, output_paths

pytestmark = pytest.mark.unit

EAGLE3 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
VALID: dict[str, Any] = {
    "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
    "engine": {"image": "vllm/vllm-openai:v0.24.0"},
    "searchSpace": {
        "candidates": [{"method": "suffix", "num_speculative_tokens": 8}],
        "grids": [{"method": "eagle3", "model": EAGLE3, "numSpeculativeTokens": [2, 3]}],
    },
}


def spec_with(**changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(VALID)
    spec.update(changes)
    return spec


# (name, spec, a phrase of the model's message, refused by the API server's CEL too)
INVALID = [
    ("empty search space", spec_with(searchSpace={}), "at least one candidate", True),
    (
        "duplicate candidates",
        spec_with(
            searchSpace={"candidates": [{"method": "suffix", "num_speculative_tokens": 8}] * 2}
        ),
        "duplicate config",
        False,
    ),
    (
        "grid repeats a candidate",
        spec_with(
            searchSpace={
                "candidates": [{"method": "eagle3", "model": EAGLE3, "num_speculative_tokens": 2}],
                "grids": [{"method": "eagle3", "model": EAGLE3, "numSpeculativeTokens": [2]}],
            }
        ),
        "duplicate config",
        False,
    ),
    ("ladder descends", spec_with(concurrencyLadder=[1, 16, 4]), "strictly ascending", True),
    ("ladder repeats", spec_with(concurrencyLadder=[1, 4, 4]), "strictly ascending", True),
    (
        "ladder above --max-num-seqs",
        spec_with(
            model={"name": "meta-llama/Llama-3.1-8B-Instruct", "extraArgs": ["--max-num-seqs=32"]}
        ),
        "exceeds --max-num-seqs 32",
        False,
    ),
    (
        "budget below one look",
        spec_with(budget={"maxGpuSeconds": 100}),
        "must pay for one trial",
        True,
    ),
    (
        "candidate method missing from the release",
        spec_with(
            engine={"image": "vllm/vllm-openai:v0.12.0"},
            searchSpace={
                "candidates": [{"method": "dspark", "model": "x/y", "num_speculative_tokens": 4}]
            },
        ),
        "dspark needs vLLM 0.25",
        True,
    ),
    (
        "grid method missing from the release",
        spec_with(
            engine={"image": "vllm/vllm-openai:v0.12.0"},
            searchSpace={
                "grids": [{"method": "dspark", "model": "x", "numSpeculativeTokens": [4]}]
            },
        ),
        "dspark needs vLLM 0.25",
        False,
    ),
    (
        "candidate carries a schedule",
        spec_with(
            searchSpace={
                "candidates": [
                    {
                        "method": "suffix",
                        "num_speculative_tokens": 4,
                        "num_speculative_tokens_per_batch_size": [[1, 8, 4]],
                    }
                ]
            }
        ),
        "derived by the tuning",
        True,
    ),
    (
        "mirrored traffic",
        spec_with(traffic={"source": "Mirror", "httpRoute": "r"}),
        "traffic.source must be Prompts",
        True,
    ),
    (
        "request timeout outlasting the default stages' minimum",
        spec_with(traffic={"requestTimeoutSeconds": 60}),
        "requestTimeoutSeconds must be below 60 s",
        True,
    ),
    (
        "look longer than a trial",
        spec_with(trial={"lookSeconds": 120, "maxSeconds": 60}),
        "lookSeconds must be <= trial.maxSeconds",
        True,
    ),
]


@pytest.fixture(scope="module")
def checker() -> CrdChecker:
    crd = yaml.safe_load(output_paths(REPO_ROOT, TUNING_KIND)[0].read_text())
    return CrdChecker(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def as_object(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "specdecode.io/v1alpha1",
        "kind": "SpecDecodeTuning",
        "metadata": {"name": "t"},
        "spec": spec,
    }


def test_valid_spec_defaults_and_expansion(checker: CrdChecker) -> None:
    spec = SpecDecodeTuningSpec.model_validate(VALID)
    assert spec.concurrency_ladder == list(DEFAULT_LADDER)
    assert [c.method.value for c in spec.configs()] == ["suffix", "eagle3", "eagle3"]
    assert spec.apply is False
    assert checker.errors(as_object(VALID)) == []
    with_production = SpecDecodeTuningSpec.model_validate(spec_with(productionConcurrency=24))
    assert with_production.loads() == [1, 4, 16, 24, 64]


@pytest.mark.parametrize(
    ("name", "spec", "phrase", "by_server"), INVALID, ids=[c[0] for c in INVALID]
)
def test_refused_by_models_and_cel(
    checker: CrdChecker, name: str, spec: dict[str, Any], phrase: str, by_server: bool
) -> None:
    with pytest.raises(ValidationError) as caught:
        SpecDecodeTuningSpec.model_validate(spec)
    assert phrase in str(caught.value), name
    server = checker.errors(as_object(spec))
    if by_server:
        assert any(phrase in error.message for error in server), server
    else:
        assert not any(phrase in error.message for error in server)


def test_crd_committed_and_rollout_crd_unchanged() -> None:
    assert drift(REPO_ROOT) == ""
    crd = custom_resource_definition(TUNING_KIND)
    assert crd["spec"]["names"]["shortNames"] == ["sdt"]
    resource = SpecDecodeTuning.model_validate(as_object(VALID))
    assert resource.status.phase.value == "Pending"


def test_production_defaults_its_window_in_the_model_and_the_crd(checker: CrdChecker) -> None:
    wire = spec_with(production={"deployment": "llama"})
    spec = SpecDecodeTuningSpec.model_validate(wire)
    assert spec.production is not None
    assert (spec.production.deployment, spec.production.window_seconds) == ("llama", 3600)
    assert spec.production_concurrency is None  # the fallback stays its own field
    assert checker.errors(as_object(wire)) == []
    server_default = apply_defaults(checker.schema, as_object(wire))
    assert server_default["spec"]["production"]["windowSeconds"] == 3600


@pytest.mark.parametrize(
    ("production", "path"),
    [
        ({"deployment": "llama", "windowSeconds": 60}, "spec.production.windowSeconds"),
        ({"deployment": "llama", "windowSeconds": 31 * 86400}, "spec.production.windowSeconds"),
        ({"deployment": "llama.v2"}, "spec.production.deployment"),  # a dot: any pod matches
        ({"windowSeconds": 3600}, "spec.production.deployment"),  # required
    ],
)
def test_production_out_of_bounds_is_refused_by_model_and_crd(
    checker: CrdChecker, production: dict[str, Any], path: str
) -> None:
    wire = spec_with(production=production)
    with pytest.raises(ValidationError):
        SpecDecodeTuningSpec.model_validate(wire)
    assert [e.path for e in checker.errors(as_object(wire))] == [path]
