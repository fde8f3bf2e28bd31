"""The trial plan: which cells run for the next look, under the parallelism and GPU budget.

First look breadth first (elimination needs every survivor at a load measured); then
running cells keep their slot (warm engines) and the fewest-looked resume, so a cell pays
its warmup again at most twice. Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specdecode.domain.tuning.cells import CellKey, CellState
from specdecode.domain.tuning.elimination import Standing

ENGINES_PER_TRIAL = 2


@dataclass(frozen=True)
class Round:
    """The cells to measure for the next look, and what it costs."""

    cells: tuple[CellKey, ...]
    gpu_seconds: float
    done: bool
    reason: str


def look_cost(state: CellState, gpus_per_replica: int, warmup: float, look: float) -> float:
    """GPU-seconds of the cell's next look (its first one also pays the warmup)."""
    seconds = look + (0.0 if state.active else warmup)
    return ENGINES_PER_TRIAL * gpus_per_replica * seconds


def wants_look(
    key: CellKey, cells: Mapping[CellKey, CellState], standing: Standing, max_seconds: float
) -> bool:
    """Whether a cell still needs measuring."""
    state = cells.get(key)
    if key.config in standing.dropped or key in standing.retired:
        return False
    verdict = standing.verdict(key.load)
    if verdict.decided or key.config in verdict.settled:
        return False
    return state is None or state.seconds < max_seconds


def next_round(
    configs: Sequence[str],
    loads: Sequence[int],
    cells: Mapping[CellKey, CellState],
    standing: Standing,
    *,
    max_parallel: int,
    budget_left: float,
    gpus_per_replica: int,
    warmup: float,
    look: float,
    max_seconds: float,
) -> Round:
    """The next round's cells: running ones first, then new ones into free slots."""
    wanted = [
        CellKey(c, load)
        for load in loads
        for c in configs
        if wants_look(CellKey(c, load), cells, standing, max_seconds)
    ]
    if not wanted:
        return Round((), 0.0, True, "every load decided")
    order = {c: i for i, c in enumerate(configs)}

    def priority(key: CellKey) -> tuple[int, bool, int, int, int]:
        state = cells.get(key, CellState(key))
        looks = len(state.look_times)
        return (min(looks, 1), not state.active, looks, key.load, order[key.config])

    chosen: list[CellKey] = []
    cost = 0.0
    for key in sorted(wanted, key=priority):
        if len(chosen) >= max_parallel:
            break
        price = look_cost(cells.get(key, CellState(key)), gpus_per_replica, warmup, look)
        if cost + price > budget_left:
            continue
        chosen.append(key)
        cost += price
    if not chosen:
        return Round((), 0.0, True, "GPU budget spent: report from the looks taken")
    return Round(tuple(chosen), cost, False, f"{len(wanted)} cells want looks")
