"""Adoption in four lines: with a `workloadRef`, `model` and `engine` may be left out (read
from the source); without one they stay required, refused by the models and by the
generated CRD (schema + CEL, offline) with a message naming the field. The release rules
that need an engine wait for it rather than refuse or pass blindly."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from sdr_crd_checker import CrdChecker

from localcluster.manifests import REPO
from specdecode.api import SpecDecodeRollout, SpecDecodeRolloutSpec
from specdecode.tools.crdgen import output_paths

pytestmark = pytest.mark.unit

EAGLE3 = {
    "method": "eagle3",
    "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "num_speculative_tokens": 3,
}
MEDUSA = {"method": "medusa", "model": "FasterDecoding/medusa-vicuna", "num_speculative_tokens": 3}


@pytest.fixture(scope="module")
def checker() -> CrdChecker:
    crd = yaml.safe_load(output_paths(REPO)[0].read_text())
    return CrdChecker(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def rollout(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "specdecode.io/v1alpha1",
        "kind": "SpecDecodeRollout",
        "metadata": {"name": "chat-eagle3", "namespace": "default"},
        "spec": spec,
    }


def test_a_workload_ref_and_speculative_alone_are_admitted(checker: CrdChecker) -> None:
    four_lines = rollout({"workloadRef": {"name": "chat"}, "speculative": EAGLE3})
    parsed = SpecDecodeRollout.model_validate(four_lines)
    assert parsed.spec.model is None and parsed.spec.engine is None
    assert checker.errors(four_lines) == []


@pytest.mark.parametrize("field", ["model", "engine"])
def test_without_a_workload_ref_model_and_engine_are_required(
    field: str, checker: CrdChecker
) -> None:
    spec = {
        "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
        "engine": {"image": "vllm/vllm-openai:v0.33.0"},
        "speculative": EAGLE3,
    }
    SpecDecodeRollout.model_validate(rollout(spec))  # the control: whole, it passes
    assert checker.errors(rollout(spec)) == []
    del spec[field]
    with pytest.raises(ValidationError, match=f"{field} is required without a workloadRef"):
        SpecDecodeRollout.model_validate(rollout(spec))
    errors = checker.errors(rollout(spec))
    assert [(e.path, e.message) for e in errors if e.path == f"spec.{field}"], errors
    assert all(f"{field} is required without a workloadRef" in e.message for e in errors), errors


def test_the_resolved_spec_needs_both_whatever_the_workload_ref() -> None:
    with pytest.raises(ValidationError, match="model\n  Field required"):
        SpecDecodeRolloutSpec.model_validate({"workloadRef": {"name": "chat"}})


def test_a_release_rule_waits_for_the_engine_and_applies_once_it_is_given(
    checker: CrdChecker,
) -> None:
    deferred = rollout({"workloadRef": {"name": "chat"}, "speculative": MEDUSA})
    SpecDecodeRollout.model_validate(deferred)  # 0.33 would refuse medusa; no engine yet
    assert checker.errors(deferred) == []
    given = rollout(
        {
            "workloadRef": {"name": "chat"},
            "model": {"name": "lmsys/vicuna-7b-v1.3"},
            "engine": {"image": "vllm/vllm-openai:v0.33.0"},
            "speculative": MEDUSA,
        }
    )
    with pytest.raises(ValidationError, match=re.escape("medusa needs vLLM 0.11 to 0.32")):
        SpecDecodeRollout.model_validate(given)
    assert any("medusa needs vLLM 0.11 to 0.32" in e.message for e in checker.errors(given))
