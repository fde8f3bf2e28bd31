"""The round clock of a tuning on a cluster: when rounds start, loads start and looks fall due.

Pure: the reconciler observes (engines Ready, a look's measurement) and applies what this
decides (engines and load pods of the round's cells, nothing else). A round is the plan's
unit (`plan.next_round`): its cells are charged one look when it starts (`begin_look`,
which also gives each its critical value) and it ends when every cell recorded that look.
A cell that ran in the previous round keeps its engines, load pods and measuring window
(its data accumulate); a new or resumed one waits for its engines, then warms up.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdecode.domain.tuning.cells import CellKey, CellMeasurement
from specdecode.domain.tuning.progress import Progress, RoundCell

# A look that cannot bound its figures yet (no whole block from a load pod that just
# started) is asked again this often, until a whole look period has passed; then it is
# recorded as not measured and the cell's next look has more data.
RETRY_SECONDS = 2.0


@dataclass(frozen=True)
class RoundStart:
    """What starting the next round did: the cells that left it, or that the run is done."""

    done: bool
    reason: str
    stopped: tuple[CellKey, ...] = ()  # ran in the last round, not in this one


def start_round(progress: Progress, now: float) -> RoundStart:
    """Plan and charge the next round; cells that keep running carry their windows over."""
    run, previous = progress.run, progress.round
    planned = run.next_round()
    if planned.done:
        progress.round = {}
        progress.finished_at = progress.finished_at or now
        return RoundStart(True, planned.reason, tuple(previous))
    critical = run.begin_look(planned)
    look = run.plan.pace.look_seconds
    cells: dict[CellKey, RoundCell] = {}
    for key in planned.cells:
        before = previous.get(key)
        if before is not None and before.measure_from is not None:
            cells[key] = RoundCell(
                critical[key],
                load_from=before.load_from,
                measure_from=before.measure_from,
                run_seconds=before.run_seconds + look,
            )
        else:
            cells[key] = RoundCell(critical[key])
    progress.round = cells
    progress.rounds += 1
    progress.round_started_at = now
    progress.started_at = progress.started_at or now
    stopped = tuple(key for key in previous if key not in cells)
    return RoundStart(False, planned.reason, stopped)


def engines_ready(progress: Progress, key: CellKey, now: float) -> None:
    """The cell's engines are Ready: its load starts now, its window after the warm-up."""
    cell = progress.round[key]
    if cell.load_from is None:
        cell.load_from = now
        cell.measure_from = now + progress.run.plan.pace.warmup_seconds
        cell.note = ""


def due(progress: Progress, now: float) -> list[CellKey]:
    """Cells whose look may be taken now."""
    look = progress.run.plan.pace.look_seconds
    return [
        key
        for key, cell in progress.round.items()
        if not cell.recorded and (at := cell.look_due(look)) is not None and now >= at
    ]


def record(progress: Progress, key: CellKey, measured: CellMeasurement | str, now: float) -> None:
    """A look's outcome: a measurement, or why none (given up on after one look period)."""
    cell = progress.round[key]
    if isinstance(measured, CellMeasurement):
        progress.run.record(key, measured)
        cell.recorded, cell.note = True, ""
        return
    cell.note = measured
    look = progress.run.plan.pace.look_seconds
    at = cell.look_due(look)
    if at is not None and now >= at + look:
        cell.recorded = True
        progress.run.cells[key].notes.append(
            f"look {len(progress.run.cells[key].look_times)}: not measured ({measured})"
        )


def window_end(progress: Progress, key: CellKey, now: float) -> float:
    """Where a look's window ends: its due time, never later (the sequential boundary
    counts the measured time a look was charged for, not what a waiting round adds)."""
    due_at = progress.round[key].look_due(progress.run.plan.pace.look_seconds)
    return now if due_at is None else min(now, due_at)


def resumed(progress: Progress, key: CellKey) -> bool:
    """Whether the cell measured in an earlier run too (its stored blocks then count)."""
    cell, state = progress.round[key], progress.run.cells[key]
    return state.seconds > cell.run_seconds + progress.run.plan.pace.look_seconds


def next_wake(progress: Progress, now: float) -> float | None:
    """Seconds until time alone changes something (a look falls due), None: only events.

    A cell waiting for its engines has no time of its own: their readiness is a watch event.
    """
    if progress.round and progress.round_done():
        return 0.0  # the round just ended: plan the next one now
    look = progress.run.plan.pace.look_seconds
    times = []
    for cell in progress.round.values():
        if cell.recorded:
            continue
        at = cell.look_due(look)
        if at is None:
            continue
        times.append(at if cell.note == "" or now < at else now + RETRY_SECONDS)
    if not times:
        return None
    return max(min(times) - now, 0.0)
