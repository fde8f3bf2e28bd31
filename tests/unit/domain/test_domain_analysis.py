"""Stages and gates inside Analyzing: warm-up, verdicts, limits, pause, dry-run, manual."""

from __future__ import annotations

import random

import pytest
from domain_fixtures import (
    acceptance,
    acceptance_stage,
    analyzing,
    blocked_samples,
    latency_stage,
    make_spec,
    run,
    shadows_ready,
    stage_obs,
)

from specdecode.api import GateSpec, GateType, GateVerdict, Phase, SpecDecodeRolloutSpec, StagePhase
from specdecode.domain.decision import Decision
from specdecode.domain.observations import LatencySamples, MetricError, Observations
from specdecode.domain.rollout_state import RolloutState

pytestmark = pytest.mark.unit

GOOD = acceptance(0.75, drafts=20_000, requests=300)
BAD = acceptance(0.30, drafts=20_000, requests=300)
PROMETHEUS_DOWN = MetricError(source="prometheus", message="connection refused")


def _latencies(scale: float, n: int, seed: int) -> LatencySamples:
    rng = random.Random(seed)
    return blocked_samples(tuple(scale * rng.lognormvariate(-3.5, 0.3) for _ in range(n)))


def _looks(
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    observations_at: list[tuple[float, Observations]],
) -> list[Decision]:
    """Decide at each (seconds, observations) in turn; return every decision."""
    decisions: list[Decision] = []
    for seconds, observations in observations_at:
        decision = run(spec, status, observations, seconds)
        decisions.append(decision)
        status = decision.status
    return decisions


def test_no_evaluation_during_warm_up() -> None:
    spec = make_spec()
    status = analyzing(spec)
    decision = run(spec, status, shadows_ready(stage=stage_obs("acceptance", BAD)), 30)
    gate = decision.status.stages[0].gates[0]
    assert gate.verdict is GateVerdict.PENDING
    assert decision.status.stages[0].phase is StagePhase.WARMING_UP
    assert decision.traffic is not None


def test_good_candidate_goes_through_both_stages_and_promotes() -> None:
    spec = make_spec()
    status = analyzing(spec)
    good = shadows_ready(stage=stage_obs("acceptance", GOOD))
    first, done = _looks(spec, status, [(31, good), (91, good)])
    assert first.status.stages[0].gates[0].verdict is GateVerdict.SUCCESSFUL
    assert first.status.phase is Phase.ANALYZING  # min duration not reached yet
    assert done.status.stages[0].phase is StagePhase.SUCCESSFUL
    assert done.status.current_stage == "tail-latency"
    assert done.status.alpha is not None and done.status.alpha.startswith("0.75 [")
    latency = stage_obs(
        "tail-latency", baseline=_latencies(1.0, 20_000, 1), candidate=_latencies(0.9, 20_000, 2)
    )
    obs = shadows_ready(stage=latency)
    looked, promoted = _looks(spec, done.status, [(122, obs), (182, obs)])
    assert looked.status.itl_ratio is not None and "<=1.10" in looked.status.itl_ratio
    assert promoted.status.phase is Phase.PROMOTING
    assert promoted.events[-1].reason == "GatesPassed"


def test_failed_gate_beats_pause_and_says_why() -> None:
    spec = make_spec(pause_before_promotion=True)
    status = analyzing(spec)
    decision = run(spec, status, shadows_ready(stage=stage_obs("acceptance", BAD)), 31)
    assert decision.status.phase is Phase.ROLLED_BACK
    assert decision.status.reason == "GateFailed"
    assert decision.status.message.startswith("acceptance/alpha: alpha 0.300")
    assert decision.status.stages[0].phase is StagePhase.FAILED
    assert decision.status.stages[0].gates[0].failures == 1


def test_gates_passed_with_pause_waits_for_promote() -> None:
    spec = make_spec(stages=[acceptance_stage()], pause_before_promotion=True)
    good = shadows_ready(stage=stage_obs("acceptance", GOOD))
    _, paused = _looks(spec, analyzing(spec), [(31, good), (91, good)])
    assert paused.status.phase is Phase.PAUSED
    assert paused.children.shadows is True
    assert paused.traffic is None
    promote = run(spec, paused.status, shadows_ready(action="promote"), 100)
    assert promote.status.phase is Phase.PROMOTING


def test_metric_errors_never_pass_and_roll_back_past_the_limit() -> None:
    spec = make_spec(consecutive_error_limit=4)
    status = analyzing(spec)
    down = shadows_ready(stage=stage_obs("acceptance", PROMETHEUS_DOWN))
    decisions = _looks(spec, status, [(31 + 15 * i, down) for i in range(5)])
    for decision in decisions[:4]:
        assert decision.status.phase is Phase.ANALYZING
        assert decision.status.stages[0].gates[0].verdict is GateVerdict.ERROR
    assert decisions[3].status.stages[0].gates[0].consecutive_errors == 4
    last = decisions[4].status
    assert last.phase is Phase.ROLLED_BACK
    assert last.reason == "MetricsUnavailable"
    assert "connection refused" in last.message


def test_an_error_after_a_pass_does_not_count_as_a_pass() -> None:
    spec = make_spec()
    status = analyzing(spec)
    good = shadows_ready(stage=stage_obs("acceptance", GOOD))
    down = shadows_ready(stage=stage_obs("acceptance", PROMETHEUS_DOWN))
    decisions = _looks(spec, status, [(31, good), (91, down), (106, good)])
    assert decisions[1].status.current_stage == "acceptance"  # Error at min duration: not done
    assert decisions[1].status.stages[0].gates[0].value == pytest.approx(0.75)  # last numbers kept
    assert decisions[2].status.current_stage == "tail-latency"
    assert decisions[2].status.stages[0].gates[0].consecutive_errors == 0


def test_dry_run_gate_is_reported_not_enforced() -> None:
    gates = [
        GateSpec(name="alpha", type=GateType.ACCEPTANCE),
        GateSpec(name="alpha-strict", type=GateType.ACCEPTANCE, min_alpha=0.9, dry_run=True),
    ]
    spec = make_spec(stages=[acceptance_stage(gates=gates)])
    good = shadows_ready(stage=stage_obs("acceptance", GOOD))
    first, done = _looks(spec, analyzing(spec), [(31, good), (91, good)])
    strict = first.status.stages[0].gates[1]
    assert strict.verdict is GateVerdict.FAILED and strict.dry_run
    assert done.status.phase is Phase.PROMOTING
    # The stage's message must not read as if the failed dry-run gate were a pass.
    assert "alpha-strict (dry run, Failed, not enforced): alpha" in done.status.stages[0].message


def test_manual_analysis_measures_but_never_enforces() -> None:
    spec = make_spec(stages=[acceptance_stage()], manual=True)
    bad = shadows_ready(stage=stage_obs("acceptance", BAD))
    first, done = _looks(spec, analyzing(spec), [(31, bad), (91, bad)])
    assert first.status.phase is Phase.ANALYZING
    assert first.status.stages[0].gates[0].verdict is GateVerdict.FAILED
    assert done.status.phase is Phase.PAUSED
    assert "manual" in done.status.message


def test_observations_of_another_stage_are_no_data() -> None:
    spec = make_spec()
    decision = run(spec, analyzing(spec), shadows_ready(stage=stage_obs("tail-latency", BAD)), 31)
    gate = decision.status.stages[0].gates[0]
    assert gate.verdict is GateVerdict.INCONCLUSIVE
    assert decision.status.phase is Phase.ANALYZING


def test_undecided_stage_rolls_back_as_inconclusive() -> None:
    spec = make_spec(stages=[acceptance_stage(max_duration_seconds=120)])
    nothing = shadows_ready(stage=stage_obs("acceptance", None))
    decisions = _looks(spec, analyzing(spec), [(31, nothing), (91, nothing), (151, nothing)])
    assert decisions[1].status.phase is Phase.ANALYZING
    last = decisions[2].status
    assert last.phase is Phase.ROLLED_BACK
    assert last.reason == "Inconclusive"
    assert last.stages[0].phase is StagePhase.INCONCLUSIVE


def test_inconclusive_limit_reruns_the_stage_with_a_fresh_window() -> None:
    spec = make_spec(stages=[acceptance_stage(max_duration_seconds=120)], inconclusive_limit=1)
    nothing = shadows_ready(stage=stage_obs("acceptance", None))
    rerun = _looks(spec, analyzing(spec), [(31, nothing), (151, nothing)])[-1]
    stage = rerun.status.stages[0]
    assert rerun.status.phase is Phase.ANALYZING
    assert rerun.events[-1].reason == "StageRestarted"
    assert (stage.inconclusive_runs, stage.phase) == (1, StagePhase.WARMING_UP)
    assert stage.measure_from is not None and stage.started_at is not None
    assert (stage.measure_from - stage.started_at).total_seconds() == 30
    again = _looks(spec, rerun.status, [(182, nothing), (302, nothing)])[-1]
    assert again.status.reason == "Inconclusive"


def test_evaluations_are_throttled_to_the_interval() -> None:
    spec = make_spec(failure_limit=5)
    bad = shadows_ready(stage=stage_obs("acceptance", BAD))
    decisions = _looks(spec, analyzing(spec), [(31, bad), (35, bad), (46, bad)])
    failures = [d.status.stages[0].gates[0].failures for d in decisions]
    assert failures == [1, 1, 2]


def test_failure_limit_tolerates_some_failed_looks() -> None:
    spec = make_spec(failure_limit=1)
    bad = shadows_ready(stage=stage_obs("acceptance", BAD))
    first, second = _looks(spec, analyzing(spec), [(31, bad), (46, bad)])
    assert first.status.phase is Phase.ANALYZING
    assert second.status.phase is Phase.ROLLED_BACK


def test_live_canary_stage_asks_for_the_canary() -> None:
    spec = make_spec(stages=[latency_stage(live_canary=True)])
    assert run(spec, analyzing(spec), shadows_ready(), 1).children.live_canary is True
