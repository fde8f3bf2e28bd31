"""Paired comparisons between cells at one load: the bound holds at its error over every
common look (and fails without the sequential boundary), and it separates near ties with
fewer GPU-seconds than the per-cell bounds, still picking right at the tuning's error."""

from __future__ import annotations

import math
import random
import statistics
from statistics import NormalDist

import pytest
from test_tuning import synthetic
from tuning_sim import pick_right

from specdecode.domain.sequential import critical_values
from specdecode.domain.stats import Interval
from specdecode.domain.tuning.cells import CellKey, CellMeasurement, CellState
from specdecode.domain.tuning.compare import paired_gap

pytestmark = pytest.mark.unit

LOOKS, BLOCKS_PER_LOOK, BLOCK_SD, ERROR = 10, 15, 0.2, 0.05


def _look(total: float, count: int) -> CellMeasurement:
    """A look as the domain sees it: the mean log ratio and its standard error."""
    mean = total / count
    se = BLOCK_SD / math.sqrt(count)
    point = Interval(math.exp(mean), 0.0, math.inf, count)
    return CellMeasurement(point, point, point, point, point, objective_log_se=se)


def _paired_run(rng: random.Random, criticals: tuple[float, ...]) -> float:
    """Two equally fast cells (true log ratio 0); `b` sits out a round whenever it leads
    (a data-dependent plan), then both run to the end. Returns the paired bound on a over b."""
    cells = {name: CellState(CellKey(name, 1)) for name in "ab"}
    sums = {"a": 0.0, "b": 0.0}
    for _ in range(2 * LOOKS):
        for name, state in cells.items():
            looks = len(state.history)
            if looks == LOOKS:
                continue
            ahead = sums["b"] / max(len(cells["b"].history), 1) > sums["a"] / max(looks, 1)
            if name == "b" and ahead and len(cells["a"].history) < LOOKS:
                continue
            sums[name] += sum(rng.gauss(0.0, BLOCK_SD) for _ in range(BLOCKS_PER_LOOK))
            state.criticals[looks + 1] = criticals[looks]
            state.history[looks + 1] = _look(sums[name], (looks + 1) * BLOCKS_PER_LOOK)
    return paired_gap(cells["a"], cells["b"])


def test_paired_bound_holds_at_its_error_over_every_common_look() -> None:
    reps = 1500
    boundary = critical_values(tuple((k + 1) / LOOKS for k in range(LOOKS)), ERROR)
    fixed = (NormalDist().inv_cdf(1 - ERROR),) * LOOKS  # the control: one look's z each time
    rng = random.Random(7)
    missed = sum(_paired_run(rng, boundary) < 0 for _ in range(reps))
    rng = random.Random(7)
    control_missed = sum(_paired_run(rng, fixed) < 0 for _ in range(reps))
    assert missed / reps <= ERROR + 0.015
    assert control_missed / reps >= 2 * ERROR  # repeated looks at a fixed z: far above


# Two configs 1.5 % apart at c = 16 (a tie within the 5 % tolerance) and a clear loser.
NEAR_TIE = {16: [1.30, 1.28, 0.80]}


def test_paired_bounds_separate_a_near_tie_for_fewer_gpu_seconds() -> None:
    reps = 60
    spent: dict[bool, list[float]] = {True: [], False: []}
    wrong = {True: 0, False: 0}
    for seed in range(reps):
        for paired in (True, False):
            sim = synthetic(seed, NEAR_TIE)
            sim.paired = paired
            run = sim.finish()
            spent[paired].append(run.gpu_seconds)
            wrong[paired] += not pick_right(sim, {v.load: v.leader for v in run.standing().loads})
    assert wrong[True] / reps <= sim.spec.trial.error
    assert statistics.median(spent[True]) <= 0.8 * statistics.median(spent[False])
