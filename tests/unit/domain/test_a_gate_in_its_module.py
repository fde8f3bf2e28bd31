"""A gate is what its module registers: the shared path judges and reports it from there.

Why: issue 35 asks that adding a gate touch its module, the shared path's one module and
the registry. The enum cannot grow in a test, so a toy measure takes over one type through
`register` alone (the real one set aside) and declares its roles elsewhere; the shared
path (the boundary into status, the metrics, the concurrency verdict) must follow the toy,
with no per-type table to edit. The same calls under the real registration are the control.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from domain_fixtures import make_spec
from gate_looks import evaluate_gate

from specdecode.adapters.telemetry import OperatorMetrics
from specdecode.api.analysis import default_stages
from specdecode.api.gate_spec import GateSpec, GateType
from specdecode.api.status import GateVerdict, Phase, StagePhase
from specdecode.domain.concurrency_verdict import StageOutcome, lower_pass
from specdecode.domain.gate_measures import Measurement, UnsentLimit
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import LookPlan, registry
from specdecode.domain.gates.registry import GateMeasure, Look, Need
from specdecode.domain.gates.tail_latency import saturation
from specdecode.domain.observations import LatencySamples, StageObservations
from specdecode.domain.rollout_state import RolloutState as Status
from specdecode.domain.stage_state import GateRecord, StageRun
from specdecode.reconciler.analysis_boundary import plan_of
from specdecode.reconciler.status_boundary import status_of

pytestmark = pytest.mark.unit

TAKEN_OVER = GateType.ERROR_RATE  # a type with no headline, no client timings, no phrase
NOW = datetime(2026, 11, 29, tzinfo=UTC)


class ToyGate(GateMeasure):
    """Fails whenever it looks, at its own setting; a latency-like gate in every role."""

    higher_is_better = False
    statistic = "a toy figure"
    judged_against = ("max_error_rate",)
    compares_client_timings = True
    load_phrase = "the toy figure"

    def needs(self, gate: GateParams) -> frozenset[Need]:
        return frozenset({Need.CLIENT_LATENCY})

    def measure(self, gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
        limit = gate.number("max_error_rate")
        return Measurement(GateVerdict.FAILED, f"toy: 0.5 > {limit}", 0.5, 0.4, 0.6, limit)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The taken-over type judged by `ToyGate`, registered through `register` only."""
    others = {t: m for t, m in registry._REGISTRY.items() if t is not TAKEN_OVER}
    monkeypatch.setattr(registry, "_REGISTRY", others)
    registry.register(TAKEN_OVER)(ToyGate)


def judged() -> GateRecord:
    gate = GateSpec(name="toy", type=TAKEN_OVER, max_error_rate=0.1)
    plan = LookPlan(measured_seconds=60, max_seconds=600)
    return evaluate_gate(gate, StageObservations(stage_name="s"), None, NOW, plan)


def saturated_gauge(reason: str) -> float | None:
    """The candidate's specdecode_load_saturated after a look of the type refused on `reason`."""
    result = GateRecord(
        name="toy", type=TAKEN_OVER, verdict=GateVerdict.INCONCLUSIVE, reason=reason
    )
    stage = StageRun(name="s", phase=StagePhase.RUNNING, gates=[result])
    status = Status(phase=Phase.ANALYZING, current_stage="s", stages=[stage])
    metrics = OperatorMetrics()
    metrics.observe("ns", "r", status_of(Status()), status_of(status))
    labels = {"namespace": "ns", "rollout": "r", "stage": "s", "role": "candidate"}
    return metrics.registry.get_sample_value("specdecode_load_saturated", labels)


def concurrency_phrase() -> str | None:
    """What the concurrency verdict names a failure of the type at the second stage by."""
    spec = make_spec(stages=default_stages())
    passed = StageOutcome(StagePhase.SUCCESSFUL, frozenset())
    found = lower_pass(plan_of(spec), [passed, passed], 1, [TAKEN_OVER])
    return None if found is None else found.what


def lagging_reason() -> str:
    lagging = LatencySamples.from_values(client_delay=[0.004] * 100)
    prompt = LatencySamples.from_values(client_delay=[0.0001] * 100)
    reason = saturation(prompt, lagging, 0.99, 0.02, UnsentLimit())
    assert reason is not None
    return reason


@pytest.mark.usefixtures("toy")
def test_a_gate_registered_through_the_registry_alone_is_judged_and_reported() -> None:
    result = judged()
    assert (result.verdict, result.reason, result.value) == (
        GateVerdict.FAILED,
        "toy: 0.5 > 0.1",
        0.5,
    )
    assert (result.threshold, result.failures) == (0.1, 1)
    assert saturated_gauge(lagging_reason()) == 1
    assert concurrency_phrase() == "the toy figure"


def test_the_control_the_real_registration_judges_and_reports_otherwise() -> None:
    """The same calls under the real ErrorRate measure: no data, no gauge, no phrase."""
    result = judged()
    assert result.verdict is GateVerdict.INCONCLUSIVE and not result.reason.startswith("toy")
    assert saturated_gauge(lagging_reason()) is None
    assert concurrency_phrase() is None


def test_a_role_is_claimed_by_one_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two types whose results were both the alpha headline: the guard and the printer
    column could not say which to read, so `register` refuses the second."""
    acceptance = registry.measure_for(GateType.ACCEPTANCE)
    others = {t: m for t, m in registry._REGISTRY.items() if t is not TAKEN_OVER}
    monkeypatch.setattr(registry, "_REGISTRY", others)

    class SecondAlpha(ToyGate):
        headline = acceptance.headline

    with pytest.raises(ValueError, match="headline alpha claimed by two gate types"):
        registry.register(TAKEN_OVER)(SecondAlpha)
