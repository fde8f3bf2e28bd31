"""The largest status the spec allows, as written, stays well under etcd's object limit."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from annotated_types import MaxLen

from specdecode.api.acceptance_by_traffic import (
    MAX_TRAFFIC_GROUPS,
    AcceptanceBasis,
    TrafficAcceptance,
)
from specdecode.api.analysis import AnalysisSpec, StageSpec
from specdecode.api.gate_spec import GateType
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.speculative_rules import MAX_SPECULATIVE_TOKENS
from specdecode.api.status import (
    MAX_LOOKS_KEPT,
    Condition,
    ConditionStatus,
    GateLook,
    GateResult,
    GateVerdict,
    LoadStatus,
    Phase,
    SpecDecodeRolloutStatus,
    StagePhase,
    StageStatus,
)
from specdecode.api.status_budget import (
    LOOK_BUDGET,
    MAX_LOOKS_KEPT_FINISHED,
    MAX_TEXT_LENGTH,
    STATUS_BUDGET_BYTES,
    within_budget,
)

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
LONG = "x" * 5000  # a reason or message longer than anything the domain writes
FLOAT = 0.12345678901234568  # the longest a float prints


def max_length(model: Any, field: str) -> int:
    return next(m.max_length for m in model.model_fields[field].metadata if isinstance(m, MaxLen))


MAX_STAGES = max_length(AnalysisSpec, "stages")
MAX_GATES = max_length(StageSpec, "gates")
MAX_NOTES = max_length(LoadStatus, "notes")


def look(i: int) -> GateLook:
    return GateLook(
        measured_at=T0 + timedelta(seconds=i),
        measured_seconds=FLOAT * 1e6,
        verdict=GateVerdict.INCONCLUSIVE,
        value=FLOAT,
        lower_bound=FLOAT,
        upper_bound=FLOAT,
        samples=2**31,
        units=2**31,
        error=FLOAT / 1e9,
    )


def gate(stage: int, index: int) -> GateResult:
    return GateResult(
        name=f"gate-{stage}-{index}".ljust(63, "g"),
        type=GateType.TAIL_LATENCY,
        verdict=GateVerdict.INCONCLUSIVE,
        reason=LONG,
        **{
            field: FLOAT
            for field in [
                "value",
                "lower_bound",
                "upper_bound",
                "threshold",
                "baseline_value",
                "candidate_value",
                "server_baseline_value",
                "server_candidate_value",
                "mean_acceptance_length",
                "stream_value",
            ]
        },
        samples=2**31,
        units=2**31,
        acceptance_per_position=[FLOAT] * MAX_SPECULATIVE_TOKENS,
        failures=2**31,
        inconclusives=2**31,
        consecutive_errors=2**31,
        measured_at=T0,
        look_count=2**31,
        looks=[look(i) for i in range(MAX_LOOKS_KEPT)],
    )


def traffic_group(index: int) -> TrafficAcceptance:
    """A group with every field at its longest (a 40-character class)."""
    return TrafficAcceptance(
        traffic_class=f"{index:02d}".ljust(40, "c"),
        temperature="greedy",
        output_length="medium",
        requests=2**31,
        steps=2**62,
        accepted_per_step=FLOAT,
        alpha=FLOAT,
        lower_bound=FLOAT,
        upper_bound=FLOAT,
        basis=AcceptanceBasis.ENGINE,
    )


def largest(current: int) -> SpecDecodeRolloutStatus:
    config = SpeculativeConfig(method="eagle3", model="m" * 256, num_speculative_tokens=3)
    stages = [
        StageStatus(
            name=f"stage-{s}".ljust(63, "s"),
            phase=StagePhase.INCONCLUSIVE,
            started_at=T0,
            measure_from=T0,
            finished_at=T0,
            message=LONG,
            inconclusive_runs=2**31,
            gates=[gate(s, g) for g in range(MAX_GATES)],
            load=LoadStatus(
                shards="64/64",
                requests=2**31,
                client_delay_p99_ms=FLOAT,
                notes=[LONG] * MAX_NOTES,
                acceptance_by_traffic=[traffic_group(i) for i in range(MAX_TRAFFIC_GROUPS)],
            ),
        )
        for s in range(MAX_STAGES)
    ]
    conditions = [
        Condition(
            type=kind,
            status=ConditionStatus.TRUE,
            reason="R" * 128,
            message=LONG,
            last_transition_time=T0,
            observed_generation=2**62,
        )
        for kind in ("Ready", "Progressing", "Degraded", "Reconciling", "Stalled")
    ]
    return SpecDecodeRolloutStatus(
        observed_generation=2**62,
        phase=Phase.ANALYZING,
        reason="R" * 128,
        message=LONG,
        stable_speculative=config,
        stable_fingerprint="f" * 64,
        candidate_speculative=config,
        candidate_fingerprint="f" * 64,
        phase_since=T0,
        analysis_started_at=T0,
        current_stage=stages[current].name,
        current_stage_index=current,
        stages=stages,
        verdict="RolledBack",
        alpha=LONG,
        itl_ratio=LONG,
        conditions=conditions,
    )


def size(status: SpecDecodeRolloutStatus) -> int:
    return len(json.dumps(status.model_dump(mode="json", by_alias=True)).encode())


@pytest.mark.parametrize("current", [0, MAX_STAGES - 1])
def test_the_largest_status_is_written_well_under_etcds_limit(current: int) -> None:
    status = largest(current)
    assert size(status) > 4 * 1024 * 1024  # the control: unbounded, it would not fit
    written = within_budget(status)
    assert size(written) < STATUS_BUDGET_BYTES < 1024 * 1024, size(written)
    kept = [len(g.looks) for stage in written.stages for g in stage.gates]
    shared = LOOK_BUDGET // MAX_GATES  # the stage in progress: the look budget, shared
    assert kept.count(shared) == MAX_GATES and shared >= 16
    assert set(kept) == {shared, MAX_LOOKS_KEPT_FINISHED}
    assert written.stages[current].gates[0].looks == status.stages[current].gates[0].looks[-shared:]
    assert written.stages[0].gates[0].look_count == 2**31  # the summary stays
    assert len(written.message) == MAX_TEXT_LENGTH
    assert within_budget(written) is written  # idempotent: read back, nothing to write
    split = [
        [g.traffic_class for g in stage.load.acceptance_by_traffic]
        for stage in written.stages
        if stage.load
    ]
    assert split[current] == [f"{i:02d}".ljust(40, "c") for i in range(MAX_TRAFFIC_GROUPS)]
    assert sum(map(len, split)) == MAX_TRAFFIC_GROUPS  # only the stage in progress keeps it


def test_after_the_analysis_the_last_stage_that_ran_keeps_its_acceptance_split() -> None:
    status = largest(0)
    stages = [
        stage.model_copy(update={"phase": StagePhase.PENDING}) if index > 2 else stage
        for index, stage in enumerate(status.stages)
    ]
    ended = status.model_copy(
        update={"phase": Phase.ROLLED_BACK, "current_stage_index": None, "stages": stages}
    )
    written = within_budget(ended)
    kept = [bool(stage.load and stage.load.acceptance_by_traffic) for stage in written.stages]
    assert kept == [index == 2 for index in range(MAX_STAGES)]  # the stage that failed
    assert within_budget(written) is written


def test_a_default_stage_keeps_every_look_and_a_small_status_is_written_as_it_is() -> None:
    status = largest(0)
    stage = status.stages[0].model_copy(update={"gates": status.stages[0].gates[:2]})
    small = SpecDecodeRolloutStatus(
        phase=Phase.ANALYZING, current_stage_index=0, stages=[stage], message="ok"
    )
    written = within_budget(small)
    assert [len(g.looks) for g in written.stages[0].gates] == [MAX_LOOKS_KEPT] * 2
    assert within_budget(written) is written
