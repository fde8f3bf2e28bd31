"""How much better one config can be than another at the same load: bounds on log ratios.

Two bounds, both valid at every look at once: per cell (each cell's tightest bound over its
looks) and paired (the difference of the two cells' log estimates at their latest common
look). Why each holds: docs/internals.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from specdecode.domain.clustered import t_critical
from specdecode.domain.tuning.cells import NONE, CellState


def _log(value: float) -> float:
    return math.log(value) if value > 0 else -math.inf


def log_bounds(state: CellState) -> tuple[float, float]:
    """Tightest (lower, upper) bound on the log objective over the cell's looks."""
    if state.key.config == NONE:
        return 0.0, 0.0
    seen = [m.objective for m in state.history.values()]
    if state.measurement is not None:
        seen.append(state.measurement.objective)
    if not seen:
        return -math.inf, math.inf
    lower = max(_log(i.lower) for i in seen)
    upper = min(_log(i.upper) for i in seen)
    if lower > upper:  # disjoint looks: some bound failed; fall back to the latest look
        latest = seen[-1]
        return _log(latest.lower), _log(latest.upper)
    return lower, upper


def paired_gap(high: CellState, low: CellState) -> float:
    """Upper bound on log(high / low): the tightest paired difference over common looks."""
    common = set(high.history) & set(low.history) & set(high.criticals) & set(low.criticals)
    tightest = math.inf
    for look in common:
        a, b = high.history[look], low.history[look]
        if a.objective_log_se is None or b.objective_log_se is None:
            continue
        z = max(high.criticals[look], low.criticals[look])
        t = t_critical(z, min(a.objective.samples, b.objective.samples) - 1)
        se = math.hypot(a.objective_log_se, b.objective_log_se)
        if not math.isinf(t):
            gap = _log(a.objective.value) - _log(b.objective.value) + t * se
            tightest = min(tightest, gap)
    return tightest


class Gaps:
    """Upper bounds on log(true objective of one config / another's) at one load."""

    def __init__(self, states: Mapping[str, CellState]) -> None:
        self._states = states
        self._bounds = {c: log_bounds(s) for c, s in states.items()}

    def upper(self, high: str, low: str) -> float:
        """The tighter of the per-cell and the paired bound (per-cell only against NONE)."""
        per_cell = self._bounds[high][1] - self._bounds[low][0]
        if NONE in (high, low) or per_cell < 0:
            return per_cell
        return min(per_cell, paired_gap(self._states[high], self._states[low]))
