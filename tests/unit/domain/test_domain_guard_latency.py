"""The guard's latency half after promotion: production's server step-ITL tail past the
promoted config's own figure at the analysis x (1 + latencyTolerance) is a Drifted
condition (reason LatencyDrifted) and one Warning Event, optionally a rollback; no change
at all (so no status write) while nothing drifts, the data are missing, the half is off
or no stage left a figure."""

from __future__ import annotations

import math
from typing import Any

import pytest
from domain_fixtures import EAGLE3, at, make_spec, observe, ready, run, status_in

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import Phase, SpecDecodeRolloutSpec
from specdecode.api.gate_spec import GateType
from specdecode.api.guard import DriftAction, DriftKind, GuardSpec
from specdecode.api.status import ConditionStatus
from specdecode.domain.decision import Decision, EventType
from specdecode.domain.drift import AcceptanceBlock, ProductionAcceptance
from specdecode.domain.latency_drift import ProductionLatency
from specdecode.domain.observations import MetricError, StepHistogram
from specdecode.domain.rollout_state import RolloutState

pytestmark = pytest.mark.unit

FIRST_LOOK = 300.0  # guard defaults: every 300 s in windows of 900 s from the promotion
CANDIDATE_P99 = 0.035  # the promoted config's figure: line 0.049 s, judged at the 0.05 s edge
BOUNDS = (0.025, 0.05, 0.075, math.inf)


def _spec(**guard: Any) -> SpecDecodeRolloutSpec:
    return make_spec().model_copy(update={"guard": GuardSpec(**guard)})


def _promoted(spec: SpecDecodeRolloutSpec, figure: float | None = CANDIDATE_P99) -> Any:
    """Promoted at t=0 (the fixture's analysis gates minAlpha 0.55), its tail-latency
    stage's p99-itl gate holding the candidate's server-side P99 `figure`."""
    status = status_in(spec, "Promoted")
    stages = []
    for stage in status.stages:
        gates = [
            gate.model_copy(
                update={"server_candidate_value": figure, "server_baseline_value": 0.03}
            )
            if gate.type is GateType.TAIL_LATENCY
            else gate
            for gate in stage.gates
        ]
        stages.append(stage.model_copy(update={"gates": gates}))
    status = status.model_copy(update={"stages": stages})
    return run(spec, status, observe(production=ready(EAGLE3)), 1).status  # settled


def _tails(share: float, count: int = 10, observations: float = 4000.0) -> tuple[Any, ...]:
    """Blocks with `share` of their observations above 0.05 s (alternating +-10 %)."""
    out = []
    for i in range(count):
        above = observations * share * (1.1 if i % 2 else 0.9)
        below_edge = observations - above
        out.append(StepHistogram(BOUNDS, (below_edge / 2, below_edge, observations, observations)))
    return tuple(out)


HEALTHY_ALPHA = tuple(AcceptanceBlock(3000.0, 3000.0 * 0.7) for _ in range(10))


def _look(
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    seconds: float,
    latency: Any,
    acceptance: Any = None,
) -> Decision:
    if acceptance is None:
        acceptance = ProductionAcceptance(at(seconds), HEALTHY_ALPHA)
    observed = observe(
        production=ready(EAGLE3), production_acceptance=acceptance, production_latency=latency
    )
    return run(spec, status, observed, seconds)


def test_a_tail_past_the_line_is_a_latency_drift_with_its_figures_and_one_warning() -> None:
    spec = _spec()
    status = _promoted(spec)
    latency = ProductionLatency(at(FIRST_LOOK), _tails(0.05))
    decision = _look(spec, status, FIRST_LOOK, latency)
    assert decision.status.phase is Phase.PROMOTED and decision.children.production == setting_of(
        EAGLE3
    )
    drift = decision.status.drift
    assert drift is not None and drift.kind is DriftKind.LATENCY
    assert drift.edge_seconds == 0.05 and drift.reference_seconds == CANDIDATE_P99
    assert drift.tail_share == pytest.approx(0.05) and drift.lower_bound > 0.01
    assert drift.alpha is None and drift.observations == 40000
    assert [(e.reason, e.type) for e in decision.events] == [("Drifted", EventType.WARNING)]
    condition = next(c for c in decision.status.conditions if c.type == "Drifted")
    assert condition.status is ConditionStatus.TRUE and condition.reason == "LatencyDrifted"
    assert "step-ITL P99 is above 50 ms" in condition.message
    assert "candidate's P99 35.0 ms (baseline 30.0 ms)" in condition.message
    assert "x 1.40" in condition.message
    # the same look again, and the next one still drifted: nothing new to say or write
    again = _look(spec, decision.status, FIRST_LOOK + 5, latency)
    later = _look(spec, again.status, 600, ProductionLatency(at(600), _tails(0.05, 20)))
    assert again.events == () and later.events == ()
    assert later.status == decision.status


@pytest.mark.parametrize(
    ("guard", "figure", "latency"),
    [
        ({}, CANDIDATE_P99, ProductionLatency(at(FIRST_LOOK), _tails(0.002))),  # healthy
        ({}, CANDIDATE_P99, ProductionLatency(at(FIRST_LOOK), _tails(0.011))),  # straddles
        ({}, CANDIDATE_P99, ProductionLatency(at(FIRST_LOOK), _tails(0.05, count=3))),  # few
        ({}, CANDIDATE_P99, ProductionLatency(at(FIRST_LOOK), ())),  # no series
        ({}, CANDIDATE_P99, ProductionLatency(at(FIRST_LOOK - 1), _tails(0.05))),  # other look
        ({}, CANDIDATE_P99, MetricError("prometheus", "timeout")),
        ({}, CANDIDATE_P99, None),  # not read
        ({"latency": False}, CANDIDATE_P99, ProductionLatency(at(FIRST_LOOK), _tails(0.05))),
        ({}, None, ProductionLatency(at(FIRST_LOOK), _tails(0.05))),  # no figure to judge by
        (
            {"latency_tolerance": 1.0},
            CANDIDATE_P99,
            ProductionLatency(at(FIRST_LOOK), _tails(0.05)),
        ),
    ],
)
def test_nothing_changes_while_the_tail_holds_or_cannot_be_judged(
    guard: dict[str, Any], figure: float | None, latency: Any
) -> None:
    """The last case: tolerance 1.0 moves the line to 0.07 s, judged at the 0.075 s edge,
    which none of these observations pass."""
    spec = _spec(**guard)
    status = _promoted(spec, figure)
    decision = _look(spec, status, FIRST_LOOK, latency)
    assert decision.status == status
    assert decision.events == ()


def test_a_later_window_surely_under_the_line_clears_the_latency_drift() -> None:
    spec = _spec()
    status = _promoted(spec)
    drifted = _look(spec, status, FIRST_LOOK, ProductionLatency(at(FIRST_LOOK), _tails(0.05)))
    recovered = _look(spec, drifted.status, 1200, ProductionLatency(at(1200), _tails(0.001)))
    assert recovered.status.drift is None
    assert [e.reason for e in recovered.events] == ["DriftRecovered"]
    assert all(c.type != "Drifted" for c in recovered.status.conditions)


def _alpha(seconds: float, alpha: float, spread: float = 0.01) -> ProductionAcceptance:
    blocks = tuple(
        AcceptanceBlock(3000.0, 3000.0 * (alpha + (spread if i % 2 else -spread)))
        for i in range(10)
    )
    return ProductionAcceptance(at(seconds), blocks)


def test_an_acceptance_drift_is_not_cleared_by_a_healthy_tail() -> None:
    """Both drift at once: acceptance is recorded; a later healthy tail with a straddling
    alpha changes nothing (only the recorded kind's own recovery clears it)."""
    spec = _spec()
    status = _promoted(spec)
    tail = ProductionLatency(at(FIRST_LOOK), _tails(0.05))
    drifted = _look(spec, status, FIRST_LOOK, tail, _alpha(FIRST_LOOK, 0.3))
    assert drifted.status.drift is not None and drifted.status.drift.kind is DriftKind.ACCEPTANCE
    healthy = ProductionLatency(at(1200), _tails(0.001))
    later = _look(spec, drifted.status, 1200, healthy, _alpha(1200, 0.54, spread=0.1))
    assert later.status == drifted.status and later.events == ()


def test_rollback_on_a_latency_drift_returns_production_to_the_previous_config() -> None:
    spec = _spec(on_drift=DriftAction.ROLLBACK)
    status = _promoted(spec)
    decision = _look(spec, status, FIRST_LOOK, ProductionLatency(at(FIRST_LOOK), _tails(0.05)))
    assert decision.status.phase is Phase.ROLLED_BACK and decision.status.reason == "Drifted"
    assert decision.children.production is None  # plain decoding, as before the promotion
    assert decision.status.drift is not None
    assert "production returns to" in decision.status.drift.message
