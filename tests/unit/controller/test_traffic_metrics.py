"""The alpha-by-traffic gauge follows the speaking stage's status, group by group."""

from __future__ import annotations

import pytest

from specdecode.adapters.telemetry import OperatorMetrics
from specdecode.adapters.traffic_metrics import TRAFFIC_LABELS
from specdecode.api.acceptance_by_traffic import TrafficAcceptance
from specdecode.api.status import (
    LoadStatus,
    Phase,
    SpecDecodeRolloutStatus,
    StagePhase,
    StageStatus,
)

pytestmark = pytest.mark.unit


def group(
    cls: str, alpha: float | None, lower: float | None = None, upper: float | None = None
) -> TrafficAcceptance:
    return TrafficAcceptance(
        traffic_class=cls,
        temperature="low",
        output_length="long",
        requests=40,
        steps=4000,
        accepted_per_step=1.0,
        alpha=alpha,
        lower_bound=lower,
        upper_bound=upper,
    )


def status(
    groups: list[TrafficAcceptance], phase: Phase = Phase.ANALYZING, current: str | None = "s0"
) -> SpecDecodeRolloutStatus:
    stages = [
        StageStatus(
            name="s0", phase=StagePhase.RUNNING, load=LoadStatus(acceptance_by_traffic=groups)
        ),
        StageStatus(name="s1"),
    ]
    return SpecDecodeRolloutStatus(phase=phase, current_stage=current, stages=stages)


def series(metrics: OperatorMetrics) -> dict[tuple[str, ...], float]:
    return {
        tuple(sample.labels[label] for label in TRAFFIC_LABELS): sample.value
        for family in metrics.registry.collect()
        if family.name == "specdecode_traffic_alpha"
        for sample in family.samples
    }


def test_each_group_of_the_speaking_stage_has_its_alpha_and_bounds() -> None:
    metrics = OperatorMetrics()
    first = status(
        [group("code", 0.7, 0.6, 0.8), group("translation", 0.2, 0.1, 0.3), group("chat", None)]
    )
    metrics.observe("ns", "r", SpecDecodeRolloutStatus(), first)
    found = series(metrics)
    assert found[("ns", "r", "s0", "code", "low", "long", "value")] == 0.7
    assert found[("ns", "r", "s0", "translation", "low", "long", "lower")] == 0.1
    assert found[("ns", "r", "s0", "translation", "low", "long", "upper")] == 0.3
    assert len(found) == 6  # chat has no alpha (no counters): no series, not a zero
    # a group that leaves status loses its series; the others follow status
    second = status([group("code", 0.75, 0.7, 0.8)])
    metrics.observe("ns", "r", first, second)
    assert set(series(metrics)) == {
        ("ns", "r", "s0", "code", "low", "long", bound) for bound in ("value", "lower", "upper")
    }
    # a rollback keeps the stage that decided it; a new analysis or a deletion drops it
    ended = status([group("code", 0.75, 0.7, 0.8)], Phase.ROLLED_BACK, current=None)
    metrics.observe("ns", "r", second, ended)
    assert len(series(metrics)) == 3
    metrics.observe("ns", "r", ended, status([], Phase.DEPLOYING, current=None))
    assert series(metrics) == {}
    metrics.observe("ns", "r", SpecDecodeRolloutStatus(), second)
    metrics.forget("ns", "r")
    assert series(metrics) == {}
