"""Lifecycle scenarios: creation, restarts on edits, promotion, rollback, degradation."""

from __future__ import annotations

import pytest
from domain_fixtures import (
    CRASH,
    EAGLE3,
    GPU_FULL,
    NGRAM,
    T0,
    at,
    current_evidence,
    make_spec,
    observe,
    pending,
    ready,
    run,
    shadows_ready,
    status_in,
)
from pydantic import Field

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import Phase, StagePhase
from specdecode.api.analysis import AnalysisSpec
from specdecode.api.speculative import fingerprint_of
from specdecode.api.traffic import TrafficSpec
from specdecode.domain.invalid import decide_invalid_spec
from specdecode.domain.observations import ChildState
from specdecode.domain.rollout_state import RolloutState

pytestmark = pytest.mark.unit

SPEC = make_spec()


def test_first_reconcile_starts_an_analysis_with_production_on_stable() -> None:
    decision = run(SPEC, RolloutState(), observe(), 0)
    status = decision.status
    assert status.phase is Phase.DEPLOYING
    assert status.candidate_fingerprint == EAGLE3.fingerprint()
    assert status.analysis_started_at == status.phase_since == T0
    assert [stage.phase for stage in status.stages] == [StagePhase.PENDING] * 2
    assert [event.reason for event in decision.events] == ["AnalysisStarted"]
    children = decision.children
    wanted = (None, None, setting_of(EAGLE3))
    assert (children.production, children.baseline, children.candidate) == wanted
    assert children.shadows is True


def test_plain_decoding_desired_and_stable_is_promoted_without_shadows() -> None:
    spec = make_spec(speculative=None)
    decision = run(spec, RolloutState(), observe(production=ready(None)), 0)
    assert decision.status.phase is Phase.PROMOTED
    assert decision.status.reason == "UpToDate"
    assert decision.children.shadows is False


def test_shadows_ready_start_stage_zero_with_warm_up() -> None:
    status = status_in(SPEC, "Deploying")
    decision = run(SPEC, status, shadows_ready(), 42)
    stage = decision.status.stages[0]
    assert decision.status.phase is Phase.ANALYZING
    assert decision.status.current_stage == "acceptance"
    assert stage.phase is StagePhase.WARMING_UP
    assert stage.started_at == at(42)
    assert stage.measure_from == at(42 + 30)
    assert decision.traffic is not None
    assert (decision.traffic.stage_name, decision.traffic.concurrency) == ("acceptance", 4)


def test_deadline_message_carries_the_schedulers_reason() -> None:
    status = status_in(SPEC, "Deploying")
    decision = run(SPEC, status, observe(candidate=pending(GPU_FULL)), 601)
    assert decision.status.phase is Phase.ROLLED_BACK
    assert GPU_FULL in decision.status.message
    assert GPU_FULL in decision.events[0].message
    degraded = next(c for c in decision.status.conditions if c.type == "Degraded")
    assert (degraded.status.value, degraded.reason) == ("True", "ProgressDeadlineExceeded")


def test_mid_analysis_edit_restarts_cleanly() -> None:
    status = status_in(SPEC, "Analyzing")
    edited = make_spec(speculative=NGRAM)
    decision = run(edited, status, shadows_ready(candidate=EAGLE3), 50)
    new = decision.status
    assert new.phase is Phase.DEPLOYING
    assert new.reason == "AnalysisRestarted"
    assert new.candidate_fingerprint == NGRAM.fingerprint()
    assert new.analysis_started_at == at(50)
    assert all(stage.phase is StagePhase.PENDING for stage in new.stages)
    assert decision.children.candidate == setting_of(NGRAM)
    assert decision.traffic is None


def test_edited_stages_restart_the_analysis() -> None:
    status = status_in(SPEC, "Analyzing")
    from domain_fixtures import acceptance_stage

    edited = make_spec(stages=[acceptance_stage(name="alpha-only")])
    decision = run(edited, status, shadows_ready(), 5)
    # The shadows already run the right configs, so the new analysis starts at once.
    assert [event.reason for event in decision.events] == ["AnalysisRestarted", "ShadowsReady"]
    assert decision.status.analysis_started_at == at(5)
    assert [stage.name for stage in decision.status.stages] == ["alpha-only"]


def test_a_traffic_edit_mid_analysis_restarts_it_on_the_new_plan() -> None:
    """Looks taken under one traffic definition are not judged with another's: the load
    pods' plan changes with the restart (a new start time), so they are recreated too."""
    status = status_in(SPEC, "Analyzing")
    assert status.analysis_fingerprint is not None
    traffic = SPEC.analysis.traffic.model_copy(update={"temperature": 0.9})
    edited = make_spec(traffic=traffic)
    decision = run(edited, status, shadows_ready(), 5)
    assert [event.reason for event in decision.events] == ["EvidenceChanged", "ShadowsReady"]
    assert decision.events[0].message.startswith("analysis.traffic changed")
    assert decision.status.analysis_started_at == at(5)
    assert decision.status.analysis_fingerprint != status.analysis_fingerprint
    assert decision.traffic is not None and decision.traffic.started_at == at(5)


def test_a_gate_edit_mid_analysis_restarts_it_and_an_unedited_spec_does_not() -> None:
    status = status_in(SPEC, "Analyzing")
    assert run(make_spec(), status, shadows_ready(), 5).status.analysis_started_at == T0
    from domain_fixtures import acceptance_stage, latency_stage

    stricter = acceptance_stage()
    stricter = stricter.model_copy(
        update={"gates": [g.model_copy(update={"min_alpha": 0.9}) for g in stricter.gates]}
    )
    decision = run(make_spec(stages=[stricter, latency_stage()]), status, shadows_ready(), 5)
    assert [event.reason for event in decision.events] == ["EvidenceChanged", "ShadowsReady"]
    assert decision.status.analysis_started_at == at(5)


def test_an_analysis_begun_without_a_plan_hash_goes_on_and_writes_nothing() -> None:
    """An analysis an older operator began (or whose CRD prunes analysisFingerprint) goes
    on as it is: no restart, and no hash filled in, which would be a status write on every
    reconcile wherever the field is pruned."""
    status = status_in(SPEC, "Analyzing").model_copy(
        update={"analysis_fingerprint": None, "evidence": None}
    )
    decision = run(make_spec(inconclusive_limit=3), status, shadows_ready(), 5)
    assert decision.status.analysis_started_at == T0
    assert decision.status.analysis_fingerprint is None
    assert decision.status.evidence is None
    assert not [e for e in decision.events if e.reason == "AnalysisRestarted"]


def test_a_limit_that_splits_each_looks_error_is_part_of_the_plan() -> None:
    status = status_in(SPEC, "Analyzing")
    decision = run(make_spec(inconclusive_limit=3), status, shadows_ready(), 5)
    assert [event.reason for event in decision.events] == ["EvidenceChanged", "ShadowsReady"]


def test_only_what_differs_from_the_defaults_is_hashed() -> None:
    """A release that adds an optional field (here a subclass of the traffic model with one
    more) leaves a running analysis' plan hash as it was; a value edit changes it."""

    class NextReleaseTraffic(TrafficSpec):
        future_knob: str | None = None

    class NextReleaseAnalysis(AnalysisSpec):
        traffic: NextReleaseTraffic = Field(default_factory=NextReleaseTraffic)

    next_release = NextReleaseAnalysis.model_validate(SPEC.analysis.model_dump())
    seen = observe()
    parts = current_evidence(SPEC, seen)
    assert current_evidence(SPEC.model_copy(update={"analysis": next_release}), seen) == parts
    edited = SPEC.analysis.model_copy(update={"interval_seconds": 30})
    assert current_evidence(SPEC.model_copy(update={"analysis": edited}), seen) != parts


def test_git_revert_to_stable_after_rollback_is_promoted() -> None:
    status = status_in(SPEC, "RolledBack")
    reverted = make_spec(speculative=None)
    decision = run(reverted, status, observe(production=ready(None)), 100)
    assert decision.status.phase is Phase.PROMOTED
    assert decision.status.reason == "UpToDate"
    assert decision.children.shadows is False


def test_new_desired_after_promotion_starts_against_the_new_stable() -> None:
    status = status_in(SPEC, "Promoted")
    assert status.stable_speculative == setting_of(EAGLE3)
    decision = run(make_spec(speculative=NGRAM), status, observe(production=ready(EAGLE3)), 100)
    assert decision.status.phase is Phase.DEPLOYING
    assert decision.children.baseline == setting_of(EAGLE3)
    assert decision.children.production == setting_of(EAGLE3)
    assert decision.children.candidate == setting_of(NGRAM)


def test_promotion_makes_the_candidate_stable() -> None:
    decision = run(SPEC, status_in(SPEC, "Promoting"), observe(production=ready(EAGLE3)), 30)
    status = decision.status
    assert status.stable_speculative == setting_of(EAGLE3)
    assert status.stable_fingerprint == fingerprint_of(EAGLE3)
    assert status.verdict == "Promoted"
    assert decision.children.production == setting_of(EAGLE3)


def test_promoting_renders_production_with_the_candidate_and_no_shadows() -> None:
    decision = run(SPEC, status_in(SPEC, "Promoting"), observe(production=pending()), 1)
    assert decision.children.production == setting_of(EAGLE3)
    assert decision.children.shadows is False


def test_promotion_deadline_reverts_production() -> None:
    status = status_in(SPEC, "Promoting")
    decision = run(SPEC, status, observe(production=pending(crash=CRASH)), 700)
    assert decision.status.phase is Phase.ROLLED_BACK
    assert CRASH in decision.status.message
    assert decision.children.production is None


def test_production_unready_within_grace_stays_promoted_then_degrades() -> None:
    promoted = status_in(SPEC, "Promoted")
    first = run(SPEC, promoted, observe(production=pending()), 100)
    assert first.status.phase is Phase.PROMOTED
    ready_condition = next(c for c in first.status.conditions if c.type == "Ready")
    assert (ready_condition.status.value, ready_condition.reason) == ("False", "ProductionNotReady")
    later = run(SPEC, first.status, observe(production=pending()), 650)
    assert later.status.phase is Phase.PROMOTED
    degraded = run(SPEC, later.status, observe(production=pending()), 701)
    assert degraded.status.phase is Phase.DEGRADED


def test_failed_leaves_on_retry_only_when_the_cause_is_gone() -> None:
    failed = status_in(SPEC, "Failed")
    again = run(SPEC, failed, observe(generation=2, traffic_error="still missing"), 10)
    assert again.status.phase is Phase.FAILED
    assert [event.reason for event in again.events] == ["SpecChanged", "TrafficSourceInvalid"]
    steady = run(SPEC, again.status, observe(generation=2, traffic_error="still missing"), 20)
    assert steady.status.phase is Phase.FAILED
    assert steady.events == ()


def test_child_absent_is_not_ready() -> None:
    assert not ChildState(exists=False).ready
    decision = run(SPEC, status_in(SPEC, "Deploying"), observe(), 10)
    assert decision.status.phase is Phase.DEPLOYING


def test_invalid_spec_fails_once_then_recovers_on_a_new_generation() -> None:
    analysis = status_in(SPEC, "Analyzing")
    first = decide_invalid_spec(analysis, "spec.gpuPool: GPUs must match TP", 2, at(10))
    assert first.status.phase is Phase.FAILED
    assert first.status.reason == "InvalidSpec"
    assert first.status.observed_generation == 2
    assert [event.reason for event in first.events] == ["InvalidSpec"]
    degraded = next(c for c in first.status.conditions if c.type == "Degraded")
    assert (degraded.status.value, degraded.reason) == ("True", "InvalidSpec")
    assert "GPUs must match TP" in degraded.message
    assert first.children.production is None and first.children.shadows is False
    again = decide_invalid_spec(first.status, "spec.gpuPool: GPUs must match TP", 2, at(20))
    assert again.events == ()
    assert again.status == first.status
    fixed = run(SPEC, again.status, shadows_ready(generation=3), 30)
    assert fixed.status.phase is Phase.ANALYZING
    assert [event.reason for event in fixed.events] == ["SpecChanged", "ShadowsReady"]


def test_fixing_an_invalid_spec_back_to_the_stable_config_is_promoted() -> None:
    promoted = status_in(SPEC, "Promoted")
    failed = decide_invalid_spec(promoted, "bad", 2, at(10)).status
    fixed = run(SPEC, failed, observe(generation=3, production=ready(EAGLE3)), 20)
    assert fixed.status.phase is Phase.PROMOTED
    assert fixed.status.reason == "UpToDate"
