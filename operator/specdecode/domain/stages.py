"""Stage timeline: when a stage measures, how long it has measured, when it must end.

A stage starts (`started_at`) with its shadow load; the first `warmupSeconds` are not
judged; `measure_from` = started_at + warm-up. `minDurationSeconds` and
`maxDurationSeconds` count from `measure_from`. Gates are evaluated at most once per
`analysis.intervalSeconds` and only after `measure_from`; the gates' error spending counts
information time (measured / maxDurationSeconds), not looks, so any number of looks keeps
its error.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from specdecode.domain.gate_boundary import pending_result
from specdecode.domain.rollout_settings import StageSettings
from specdecode.domain.stage_state import GateRecord, StageRun
from specdecode.vocabulary import Evidence, StagePhase


def fresh_stages(stages: Sequence[StageSettings]) -> list[StageRun]:
    """Every stage Pending, with its gates Pending: the start of an analysis."""
    return [
        StageRun(name=stage.name, gates=[pending_result(gate) for gate in stage.gates])
        for stage in stages
    ]


def evidence_of(server_side_mirror: bool, splitter_mirror: bool) -> Evidence:
    """What a stage's verdicts rest on (status says so): the engines' metrics alone under
    Mirror traffic paired server-side, paired responses through the splitter, else the
    load pods' replayed prompts."""
    if server_side_mirror:
        return Evidence.SERVER_SIDE
    if splitter_mirror:
        return Evidence.CLIENT_SIDE_PAIRED
    return Evidence.CLIENT_SIDE_REPLAYED


def start_stage(
    stage: StageSettings,
    now: datetime,
    inconclusive_runs: int = 0,
    evidence: Evidence | None = None,
) -> StageRun:
    """The stage as it begins now: load starts, measuring after the warm-up."""
    return StageRun(
        evidence=evidence,
        name=stage.name,
        phase=StagePhase.WARMING_UP,
        started_at=now,
        measure_from=now + timedelta(seconds=stage.warmup_seconds),
        gates=[pending_result(gate) for gate in stage.gates],
        inconclusive_runs=inconclusive_runs,
    )


def measure_from(stage: StageRun) -> datetime | None:
    """End of the warm-up (None if the stage has not started)."""
    return stage.measure_from


def is_measuring(stage: StageRun, now: datetime) -> bool:
    """True once the warm-up is over (strictly: a zero-length window has no data)."""
    return stage.measure_from is not None and now > stage.measure_from


def measured_seconds(stage: StageRun, now: datetime) -> float:
    """Seconds of measuring window so far (0 while warming up)."""
    if stage.measure_from is None:
        return 0.0
    return max(0.0, (now - stage.measure_from).total_seconds())


def min_duration_reached(settings: StageSettings, stage: StageRun, now: datetime) -> bool:
    """The stage has measured long enough for a Successful verdict to end it."""
    return measured_seconds(stage, now) >= settings.min_duration_seconds


def max_duration_reached(settings: StageSettings, stage: StageRun, now: datetime) -> bool:
    """The stage must end now; undecided gates make it Inconclusive."""
    return measured_seconds(stage, now) >= settings.max_duration_seconds


def last_evaluated(stage: StageRun) -> datetime | None:
    """When the stage's gates were last evaluated (None: never)."""
    times = [gate.measured_at for gate in stage.gates if gate.measured_at is not None]
    return max(times) if times else None


def evaluation_due(stage: StageRun, interval_seconds: int, now: datetime) -> bool:
    """Gates may be evaluated now: measuring, and an interval since the last look.

    Throttling on `measured_at` (kept in status) bounds the looks even when the operator
    is woken more often, and makes a second `decide` at the same instant a no-op.
    """
    if not is_measuring(stage, now):
        return False
    last = last_evaluated(stage)
    return last is None or (now - last).total_seconds() >= interval_seconds


def merge_gate_results(stage: StageSettings, results: list[GateRecord]) -> list[GateRecord]:
    """The stage's gates in spec order, keeping results of gates that still exist."""
    by_name = {result.name: result for result in results}
    return [by_name.get(gate.name) or pending_result(gate) for gate in stage.gates]


def inconclusive_stage_count(stages: list[StageRun]) -> int:
    """How many stage runs of this analysis ended Inconclusive."""
    return sum(stage.inconclusive_runs for stage in stages)
