"""Resolving a `workloadRef` rollout's spec from its source (`domain.source_spec`), and
reading what the source's vLLM container states (`adapters.source_facts`).

The values read must be the container's (model, served name, revision, context length,
image, release, port); a value the user wrote is kept (and checked later, by
`workload_source`); a value the container does not state is named, never guessed; and the
release rules the API server could not check without an engine are checked on the values
read.
"""

from __future__ import annotations

from typing import Any

import pytest

from specdecode.adapters.source_facts import source_facts
from specdecode.adapters.workload_source import observe_source
from specdecode.api import SpecDecodeRolloutSpec, WrittenRolloutSpec
from specdecode.api.adoption import WorkloadRef
from specdecode.api.speculative import SpeculativeConfig
from specdecode.domain.source import SourceFacts
from specdecode.domain.source_spec import Completion, completion
from specdecode.reconciler.source_boundary import resolve_spec

pytestmark = pytest.mark.unit

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
EAGLE3 = SpeculativeConfig(
    method="eagle3", model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", num_speculative_tokens=3
)
REF = WorkloadRef(name="chat")


def written(**fields: Any) -> WrittenRolloutSpec:
    return WrittenRolloutSpec.model_validate(
        {"workloadRef": {"name": "chat"}, "speculative": EAGLE3.to_wire(), **fields}
    )


def deployment(
    args: list[str], image: str = "vllm/vllm-openai:v0.31.0", env: list[Any] | None = None
) -> dict[str, Any]:
    container = {"name": "vllm", "image": image, "command": ["vllm", "serve"], "args": args}
    if env is not None:
        container["env"] = env
    template = {"metadata": {"labels": {"app": "chat"}}, "spec": {"containers": [container]}}
    return {"metadata": {"name": "chat"}, "spec": {"template": template}}


def test_what_the_container_states_is_read() -> None:
    argv = [
        MODEL,
        "--served-model-name",
        "chat",
        "--port=9000",
        "--revision",
        "main",
        "--max-model-len",
        "4096",
    ]
    facts = source_facts(deployment(argv), REF)
    assert facts == SourceFacts(
        "Deployment/chat",
        model=MODEL,
        served_model_name="chat",
        revision="main",
        max_model_len=4096,
        image="vllm/vllm-openai:v0.31.0",
        vllm_version="0.31.0",
        port=9000,
    )


def test_the_model_flag_a_stated_release_and_the_default_port_are_read() -> None:
    env = [{"name": "SPECDECODE_VLLM_VERSION", "value": "0.30.1"}]
    facts = source_facts(deployment(["--model", MODEL], image="sim:dev", env=env), REF)
    assert isinstance(facts, SourceFacts)
    assert (facts.model, facts.served_model_name, facts.port) == (MODEL, None, 8000)
    assert facts.vllm_version == "0.30.1"  # stated in the env; the tag names none


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (None, "Deployment/chat not found"),
        (deployment([MODEL, "--port", "http"]), "--port 'http', not a number"),
    ],
)
def test_a_source_that_cannot_be_read_says_why(source: Any, problem: str) -> None:
    facts = source_facts(source, REF)
    assert isinstance(facts, str) and problem in facts


def test_four_lines_resolve_to_the_values_read() -> None:
    facts = source_facts(deployment([MODEL, "--served-model-name", "chat", "--port", "9000"]), REF)
    spec = resolve_spec(written(), facts)
    assert isinstance(spec, SpecDecodeRolloutSpec), spec
    assert (spec.model.name, spec.model.served_name) == (MODEL, "chat")
    assert (spec.engine.image, spec.engine.port) == ("vllm/vllm-openai:v0.31.0", 9000)
    assert spec.engine.effective_vllm_version == "0.31.0"
    assert spec.speculative == EAGLE3


def test_a_written_model_and_engine_are_kept_and_then_checked_against_the_source() -> None:
    facts = source_facts(deployment([MODEL]), REF)
    given = written(model={"name": "other/model"}, engine={"image": "vllm/vllm-openai:v0.31.0"})
    spec = resolve_spec(given, facts)
    assert isinstance(spec, SpecDecodeRolloutSpec)
    assert spec.model.name == "other/model"  # as written, not as read
    observed = observe_source("r", spec, deployment([MODEL]), [])
    assert observed.problem is not None
    assert "spec.model.name is 'other/model' but the source runs" in observed.problem


@pytest.mark.parametrize(
    ("argv", "image", "missing"),
    [
        (["--port", "8000"], "vllm/vllm-openai:v0.31.0", "the model (no positional after serve"),
        ([MODEL], "registry.local/vllm:latest", "the vLLM release (image registry.local/vllm"),
    ],
)
def test_a_value_the_container_does_not_state_is_named_not_guessed(
    argv: list[str], image: str, missing: str
) -> None:
    resolved = resolve_spec(written(), source_facts(deployment(argv, image=image), REF))
    assert isinstance(resolved, str)
    assert resolved.startswith("Deployment/chat: its vLLM container does not state")
    assert missing in resolved


def test_an_unreadable_source_passes_its_problem_on() -> None:
    assert resolve_spec(written(), "Deployment/chat not found") == "Deployment/chat not found"


def test_a_release_rule_the_api_server_deferred_is_checked_on_the_release_read() -> None:
    medusa = {
        "method": "medusa",
        "model": "FasterDecoding/medusa-vicuna",
        "num_speculative_tokens": 3,
    }
    deferred = written(speculative=medusa)  # admitted: no engine to know the release by
    on_old = resolve_spec(deferred, source_facts(deployment([MODEL]), REF))  # 0.31: has medusa
    assert isinstance(on_old, SpecDecodeRolloutSpec)
    newer = deployment([MODEL], image="vllm/vllm-openai:v0.33.0")
    refused = resolve_spec(deferred, source_facts(newer, REF))
    assert isinstance(refused, str)
    assert "speculative.method medusa needs vLLM 0.11 to 0.32" in refused


def test_without_a_workload_ref_the_written_spec_is_the_resolved_one() -> None:
    full = WrittenRolloutSpec.model_validate(
        {"model": {"name": MODEL}, "engine": {"image": "vllm/vllm-openai:v0.31.0"}}
    )
    spec = resolve_spec(full, None)
    assert isinstance(spec, SpecDecodeRolloutSpec)
    assert spec.to_wire() == full.to_wire()


def test_the_completion_takes_what_is_not_written_from_the_source_and_names_both_missing() -> None:
    """The rules on domain types alone: a written part is kept (None: as written), the
    rest comes from the facts, and every missing value is named at once."""
    facts = SourceFacts("Deployment/chat", model=MODEL, image="vllm:v0.31.0", vllm_version="0.31.0")
    only_engine = completion(True, False, "chat", facts)
    assert only_engine == Completion("Deployment/chat", model=None, engine=facts)
    assert completion(True, True, None, "unread") == Completion("the spec")
    bare = SourceFacts("Deployment/chat", image="registry.local/vllm:latest")
    both = completion(False, False, "chat", bare)
    assert isinstance(both, str)
    assert "the model (no positional" in both and "; the vLLM release (image" in both
