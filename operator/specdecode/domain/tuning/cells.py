"""What one trial cell (one config at one concurrency) has measured, and its error level.

Unit of independence: the time block inside a cell; cells are independent of each other.
Each bound's error is spent over a cell's looks by the gates' group-sequential boundary,
with information time = measured seconds / trial.maxSeconds.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from specdecode.domain.clustered import t_critical
from specdecode.domain.sequential import critical_values
from specdecode.domain.stats import Interval

NONE = "none"  # plain decoding: the baseline itself, speedup exactly 1


@dataclass(frozen=True)
class CellKey:
    """One trial cell: a config (by fingerprint) at one concurrency."""

    config: str
    load: int


@dataclass(frozen=True)
class CellMeasurement:
    """A cell's latest look: every figure with bounds at the look's error.

    `objective` is the figure the spec's objective ranks on (TPOT speedup or throughput
    ratio, both "higher is better"); the others judge constraints and fill the report.
    """

    objective: Interval
    tpot_speedup: Interval
    throughput_ratio: Interval
    tail_ratio: Interval
    error_rate: Interval
    alpha: Interval | None = None
    accepted_length: Interval | None = None
    # Standard error of log(objective) over the cell's blocks (log_interval's se): lets two
    # cells be compared by their paired difference (`compare`) instead of by their bounds.
    objective_log_se: float | None = None


@dataclass
class CellState:
    """How long a cell has run and what it showed; the plan appends looks."""

    key: CellKey
    seconds: float = 0.0
    look_times: tuple[float, ...] = ()
    measurement: CellMeasurement | None = None
    gpu_seconds: float = 0.0
    active: bool = False  # measured in the last round: engines still warm
    notes: list[str] = field(default_factory=list)
    criticals: dict[int, float] = field(default_factory=dict)  # look number -> its z
    history: dict[int, CellMeasurement] = field(default_factory=dict)  # look -> measured


def bound_error(error: float, cells: int, loads: int = 1) -> float:
    """One-sided error of one bound: `error` over the 3K + 1 bounds per load (module doc)."""
    return error / max(3 * cells + loads, 1)


def look_critical(
    error: float, cells: int, look_times: tuple[float, ...], max_seconds: float, loads: int = 1
) -> float:
    """The critical value (z) of a cell's latest look under the sequential boundary."""
    times = tuple(min(1.0, seconds / max_seconds) for seconds in look_times)
    return critical_values(times, bound_error(error, cells, loads))[-1]


def log_interval(mean_log: float, se: float, clusters: int, z: float) -> Interval:
    """exp of a log-scale estimate +- t x se: what a ratio of medians over blocks gives."""
    if clusters < 2 or math.isinf(z):
        return Interval(math.exp(mean_log), 0.0, math.inf, clusters)
    half = t_critical(z, clusters - 1) * se
    return Interval(
        math.exp(mean_log), math.exp(mean_log - half), math.exp(mean_log + half), clusters
    )


def exact(value: float) -> Interval:
    """A figure known without error (plain decoding against itself)."""
    return Interval(value, value, value, 0)
