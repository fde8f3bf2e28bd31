"""The evidence fingerprint: what the engines and the load pods run is part of an analysis.

An Owned rollout's image, model revision or extra args, its traffic and the prompt set's
content are hashed part by part when the analysis starts; a change of any mid-analysis
restarts it once (EvidenceChanged, naming the part), a cosmetic or status-only change
does not, and an analysis that has ended is left alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from domain_fixtures import (
    EAGLE3,
    at,
    current_evidence,
    make_spec,
    observe,
    ready,
    run,
    shadows_ready,
    status_in,
)

from specdecode.api import Phase, SpecDecodeRolloutSpec, StagePhase
from specdecode.api.adoption import WorkloadRef
from specdecode.api.spec_evidence import engine_digest, plan_fingerprint
from specdecode.api.traffic import ConfigMapKeyRef
from specdecode.domain.evidence import (
    PROMPTS_PART,
    as_record,
    recorded_parts,
)
from specdecode.domain.observations import ChildState, Observations
from specdecode.domain.source import SourceObservation
from specdecode.reconciler.observe import state_of
from specdecode.reconciler.status_boundary import status_of
from specdecode.vocabulary import MIRROR_PAIRING_PART

pytestmark = pytest.mark.unit

PROMPTS = ConfigMapKeyRef(name="chat-prompts", key="prompts.jsonl")
SPEC = make_spec(traffic={"config_map_ref": PROMPTS})


def edited(section: str, **changes: Any) -> SpecDecodeRolloutSpec:
    """SPEC with fields of one section (`engine`, `model`, `serving`...) changed."""
    part = getattr(SPEC, section).model_copy(update=changes)
    return SPEC.model_copy(update={section: part})


def seen(prompts: str | None = "p1", **fields: Any) -> Observations:
    return shadows_ready(prompts_digest=prompts, **fields)


def analysing() -> Any:
    """Analyzing with a look taken, the prompt set read as p1."""
    status = status_in(SPEC, "Analyzing")
    first = run(SPEC, status, seen(), 1).status
    assert (recorded_parts(first) or {}).get(PROMPTS_PART) == "p1"
    return first


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        (edited("engine", image="vllm/vllm-openai:v0.11.3"), "engine.image"),
        (edited("model", revision="abc123"), "model.revision"),
        (edited("model", extra_args=["--max-num-seqs", "64"]), "model.extraArgs"),
        (
            edited("engine", env=[{"name": "VLLM_ATTENTION_BACKEND", "value": "FLASHINFER"}]),
            "engine.env",
        ),
        (
            make_spec(traffic={"config_map_ref": PROMPTS, "temperature": 0.7}),
            "analysis.traffic",
        ),
    ],
)
def test_an_edit_of_what_is_measured_changes_the_evidence_and_restarts_once(
    spec: SpecDecodeRolloutSpec, named: str
) -> None:
    status = analysing()
    assert current_evidence(spec, seen()) != current_evidence(SPEC, seen())
    decision = run(spec, status, seen(), 5)
    assert [e.reason for e in decision.events][:1] == ["EvidenceChanged"]
    assert decision.events[0].message.startswith(f"{named} changed")
    restarted = decision.status
    assert restarted.analysis_started_at == at(5)
    assert restarted.stages[0].started_at == at(5)  # stage 0 again, on fresh load pods
    assert [stage.phase for stage in restarted.stages[1:]] == [StagePhase.PENDING]
    assert all(not gate.looks for stage in restarted.stages for gate in stage.gates)
    assert decision.traffic is not None and decision.traffic.started_at == at(5)
    again = run(spec, restarted, seen(), 6)  # exactly once: the new evidence is recorded
    assert "EvidenceChanged" not in [e.reason for e in again.events]


def test_an_edit_of_the_prompt_sets_content_restarts_naming_the_configmap() -> None:
    status = analysing()
    decision = run(SPEC, status, seen(prompts="p2"), 5)
    assert [e.reason for e in decision.events] == ["EvidenceChanged", "ShadowsReady"]
    assert decision.events[0].message.startswith("prompt ConfigMap chat-prompts changed")
    assert decision.traffic is not None and decision.traffic.started_at == at(5)
    assert (recorded_parts(decision.status) or {}).get(PROMPTS_PART) == "p2"


def test_a_prompt_set_not_read_now_restarts_nothing_and_one_read_first_is_recorded() -> None:
    status = analysing()
    unread = run(SPEC, status, seen(prompts=None), 5)
    assert "EvidenceChanged" not in [e.reason for e in unread.events]
    assert unread.status.evidence == status.evidence
    never_read = status.model_copy(
        update={
            "evidence": as_record(
                {k: v for k, v in (recorded_parts(status) or {}).items() if k != PROMPTS_PART}
            )
        }
    )
    first_read = run(SPEC, never_read, seen(prompts="p9"), 5)
    assert "EvidenceChanged" not in [e.reason for e in first_read.events]
    assert (recorded_parts(first_read.status) or {}).get(PROMPTS_PART) == "p9"


@pytest.mark.parametrize(
    "spec",
    [
        edited("engine", image_pull_policy="Always", startup_timeout_seconds=3600),
        edited("serving", replicas=3),  # production's size: not what the shadows measure
        SPEC.model_copy(update={"speculative": EAGLE3}),
    ],
)
def test_a_change_that_measures_nothing_new_keeps_the_evidence(spec: SpecDecodeRolloutSpec) -> None:
    status = analysing()
    assert current_evidence(spec, seen()) == current_evidence(SPEC, seen())
    decision = run(spec, status, seen(action=None), 5)
    assert "EvidenceChanged" not in [e.reason for e in decision.events]
    assert decision.status.analysis_started_at == status.analysis_started_at


def test_a_status_only_change_keeps_the_evidence() -> None:
    status = analysing().model_copy(update={"message": "edited by hand", "observed_generation": 7})
    decision = run(SPEC, status, seen(generation=8), 5)
    assert "EvidenceChanged" not in [e.reason for e in decision.events]


@pytest.mark.parametrize("phase", ["Promoted", "RolledBack"])
def test_an_ended_analysis_is_not_restarted_by_an_engine_edit(phase: str) -> None:
    status = status_in(SPEC, phase)
    decision = run(
        edited("engine", image="vllm/vllm-openai:v0.11.3"),
        status,
        observe(production=ready(EAGLE3 if phase == "Promoted" else None)),
        50,
    )
    assert decision.status.phase.value == phase
    assert "EvidenceChanged" not in [e.reason for e in decision.events]


def test_a_restart_waits_for_shadows_rendered_with_the_new_engine() -> None:
    """The reconcile that restarts still sees the old shadows ready in the cache: they
    carry the old engine's label, so stage 0 does not start on them."""
    status = analysing()
    spec = edited("engine", image="vllm/vllm-openai:v0.11.3")

    def labelled(state: ChildState, for_spec: SpecDecodeRolloutSpec) -> ChildState:
        return replace(state, evidence=engine_digest(for_spec))

    old = observe(
        production=ready(None),
        baseline=labelled(ready(None), SPEC),
        candidate=labelled(ready(EAGLE3), SPEC),
        prompts_digest="p1",
    )
    restarted = run(spec, status, old, 5)
    assert [e.reason for e in restarted.events] == ["EvidenceChanged"]
    assert restarted.status.phase is Phase.DEPLOYING
    new = observe(
        production=ready(None),
        baseline=labelled(ready(None), spec),
        candidate=labelled(ready(EAGLE3), spec),
        prompts_digest="p1",
    )
    started = run(spec, restarted.status, new, 60)
    assert [e.reason for e in started.events] == ["ShadowsReady"]


def test_an_analysis_recorded_with_the_plan_hash_alone_is_compared_on_its_plan() -> None:
    """An older operator recorded the plan's hash only: the engine is not compared (that
    would restart every running analysis on upgrade), the plan still is."""
    status = analysing().model_copy(
        update={"evidence": None, "analysis_fingerprint": plan_fingerprint(SPEC)}
    )
    image = run(edited("engine", image="vllm/vllm-openai:v0.11.3"), status, seen(), 5)
    assert "EvidenceChanged" not in [e.reason for e in image.events]
    assert image.status.evidence is None  # never filled in
    plan = run(make_spec(traffic={"config_map_ref": PROMPTS, "seed": 4}), status, seen(), 5)
    assert [e.reason for e in plan.events][:1] == ["EvidenceChanged"]


def test_an_adopted_source_template_change_restarts_once_and_is_recorded() -> None:
    spec = make_spec(manual=True).model_copy(update={"workload_ref": WorkloadRef(name="chat")})

    def source(template: str) -> Observations:
        src = SourceObservation("Deployment/chat", state=ready(None), template_hash=template)
        return replace(shadows_ready(), source=src)

    first = run(
        spec, run(spec, status_in(spec, "Deploying"), source("t1"), 0).status, source("t1"), 0
    )
    assert (recorded_parts(first.status) or {}).get("workloadRef.template") == "t1"
    changed = run(spec, first.status, source("t2"), 5)
    assert [e.reason for e in changed.events] == ["SourceChanged", "ShadowsReady"]
    assert (recorded_parts(changed.status) or {}).get("workloadRef.template") == "t2"
    again = run(spec, changed.status, source("t2"), 6)
    assert not [e for e in again.events if e.reason in ("SourceChanged", "EvidenceChanged")]


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, as the API server applies a status write: maps merge, lists and scalars
    replace, null deletes."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge_patch(merged.get(key), value)
    return merged


def test_a_part_removed_by_an_edit_restarts_once_through_a_merge_patched_status() -> None:
    """An edit that removes a part (engine.env set, then unset) restarts once; the status
    written back as a merge patch must not keep the removed part, or every later reconcile
    would see it "changed" and restart again."""
    env = edited("engine", env=[{"name": "VLLM_ATTENTION_BACKEND", "value": "FLASHINFER"}])
    status = run(env, status_in(env, "Analyzing"), seen(), 1).status
    assert "engine.env" in (recorded_parts(status) or {})
    restart = run(SPEC, status, seen(), 5)
    assert [e.reason for e in restart.events][:1] == ["EvidenceChanged"]
    before, after = status_of(status), status_of(restart.status)
    written = state_of(
        type(before).model_validate(
            _merge_patch(
                before.model_dump(mode="json", by_alias=True, exclude_none=True),
                after.model_dump(mode="json", by_alias=True, exclude_none=True),
            )
        )
    )
    assert "engine.env" not in (recorded_parts(written) or {})
    for seconds in (6, 7):
        later = run(SPEC, written, seen(), seconds)
        assert "EvidenceChanged" not in [e.reason for e in later.events]
        written = later.status


def test_a_mirror_analysis_begun_before_the_splitter_default_restarts_naming_the_pairing() -> None:
    """An operator before the splitter recorded no pairing, and its Mirror analysis read the
    engines' metrics (ServerSide); under the Splitter default it would go on reading the
    splitter's streams into the same looks. It restarts once, naming the pairing; a Prompts
    analysis records no pairing and restarts for nothing on the upgrade."""
    mirror = make_spec(traffic={"source": "Mirror", "request_timeout_seconds": 10.0})
    assert MIRROR_PAIRING_PART in current_evidence(mirror, seen())
    assert MIRROR_PAIRING_PART not in current_evidence(SPEC, seen())
    begun = run(mirror, status_in(mirror, "Analyzing"), seen(), 1).status
    before_splitter = begun.model_copy(
        update={"evidence": [e for e in begun.evidence or [] if MIRROR_PAIRING_PART not in e]}
    )
    decision = run(mirror, before_splitter, seen(), 5)
    assert [e.reason for e in decision.events][:1] == ["EvidenceChanged"]
    assert decision.events[0].message.startswith(f"{MIRROR_PAIRING_PART} (Splitter) changed")
    assert "EvidenceChanged" not in [e.reason for e in run(mirror, begun, seen(), 5).events]
