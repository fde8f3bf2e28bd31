"""Failed requests are evidence against a pass, never for one (a hostile review's findings).

- Two sides that fail every request differ by nothing: neither the tail gate (whose data
  would be the failures' short waits) nor ErrorRate (0 % - 0 % apart) may pass them.
- A baseline that fails often makes the candidate's difference from it meaningless.
- A manual analysis measures without gating, but its message names a Failed gate first.
"""

from __future__ import annotations

import random

import pytest
from domain_fixtures import analyzing, blocked_samples, make_spec, run, shadows_ready

from specdecode.api import GateSpec, GateType
from specdecode.api.analysis import StageSpec
from specdecode.api.status import GateVerdict, Phase, StagePhase
from specdecode.domain.observations import LatencySamples, StageObservations

pytestmark = pytest.mark.unit

STAGE = StageSpec(
    name="prod",
    concurrency=32,
    gates=[
        GateSpec(name="p99", type=GateType.TAIL_LATENCY),
        GateSpec(name="err", type=GateType.ERROR_RATE),
    ],
)


def _failing_side(rng: random.Random, failed: int, ok: int = 0) -> LatencySamples:
    """Requests that fail fast: the latency data holds only the failures' short waits."""
    waits = [0.005 * rng.lognormvariate(0, 0.3) for _ in range(failed + ok)]
    return blocked_samples(itl=waits, blocks=150, requests_failed=failed, requests_ok=ok)


def _run_stage(spec_stage: StageSpec, baseline: LatencySamples, candidate: LatencySamples) -> Phase:
    spec = make_spec(stages=[spec_stage])
    status = analyzing(spec)
    for t in range(15, 1300, 15):
        seen = StageObservations("prod", baseline_latency=baseline, candidate_latency=candidate)
        status = run(spec, status, shadows_ready(stage=seen), t).status
        assert all(stage.phase is not StagePhase.SUCCESSFUL for stage in status.stages)
        if status.phase is not Phase.ANALYZING:
            break
    return status.phase


def test_two_sides_failing_every_request_never_pass() -> None:
    rng = random.Random(2)
    phase = _run_stage(STAGE, _failing_side(rng, 12000), _failing_side(rng, 12000))
    assert phase is Phase.ROLLED_BACK


def test_a_baseline_that_fails_often_is_no_yardstick_for_errors() -> None:
    rng = random.Random(3)
    errors_only = STAGE.model_copy(update={"gates": [STAGE.gates[1]]})
    # 30 % on both sides: no difference at all, but both broken: judged on its own share.
    phase = _run_stage(errors_only, _failing_side(rng, 3000, 7000), _failing_side(rng, 3000, 7000))
    assert phase is Phase.ROLLED_BACK


def test_a_manual_analysis_names_a_failed_gate_first() -> None:
    stage = StageSpec(name="prod", concurrency=32, gates=[STAGE.gates[1]])
    spec = make_spec(stages=[stage], manual=True)
    status = analyzing(spec)
    for t in range(15, 1300, 15):
        seen = StageObservations(
            "prod",
            baseline_latency=blocked_samples(blocks=60, requests_ok=1000),
            candidate_latency=blocked_samples(blocks=60, requests_ok=500, requests_failed=500),
        )
        status = run(spec, status, shadows_ready(stage=seen), t).status
        if status.phase is not Phase.ANALYZING:
            break
    assert status.phase is Phase.PAUSED  # a person decides
    assert status.stages[0].gates[0].verdict is GateVerdict.FAILED
    assert "not gated): err: failure rate 0.5000" in status.message
