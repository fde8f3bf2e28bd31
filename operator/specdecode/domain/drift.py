"""Drift: is production's acceptance surely below the threshold its config was judged at?

Why a module of its own: after promotion nothing else watches the config, and alpha
depends on the traffic mix. Pure: from production's counters in time blocks it says
Drifted, Recovered or nothing, with the gates' cluster-robust machinery.
Rationale in full: docs/internals.md; measured: docs/measured.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from specdecode.domain.clustered import serial_sum_of_squares, t_critical
from specdecode.domain.sequential import critical_values

BLOCKS_PER_WINDOW = 30
MIN_BLOCK_SECONDS = 5
MIN_BLOCKS = 8  # blocks with drafts: fewer, and the spread between blocks is a guess


def block_seconds(window_seconds: float, scrape_interval_seconds: float = 0.0) -> int:
    """The time block of a window: 1/30 of it, at least 5 s and at least four scrape
    intervals (whole seconds, a query step)."""
    return max(
        MIN_BLOCK_SECONDS,
        math.floor(window_seconds / BLOCKS_PER_WINDOW),
        math.ceil(4 * scrape_interval_seconds),
    )


def can_judge(window_seconds: float, scrape_interval_seconds: float) -> bool:
    """Whether a window can hold the MIN_BLOCKS blocks a verdict needs."""
    return window_seconds / block_seconds(window_seconds, scrape_interval_seconds) >= MIN_BLOCKS


@dataclass(frozen=True)
class AcceptanceBlock:
    """Production's counter increases over one time block (all its pods)."""

    draft_tokens: float
    accepted_tokens: float


@dataclass(frozen=True)
class ProductionAcceptance:
    """What the reconciler read for one guard look: production's blocks up to `look_at`."""

    look_at: datetime
    blocks: tuple[AcceptanceBlock, ...]


@dataclass(frozen=True)
class GuardLook:
    """One look of the guard's grid: the window it judges and where it lies in it."""

    window_start: datetime
    at: datetime
    index: int  # 1-based look number within the window
    times: tuple[float, ...]  # information times of this window's looks 1..index

    @property
    def seconds(self) -> float:
        """Seconds of counters the look judges."""
        return (self.at - self.window_start).total_seconds()


@dataclass(frozen=True)
class GuardGrid:
    """The instants the guard looks at: `interval` apart, in windows of `window` seconds
    from `since` (the start of the phase), so no look time needs storing in status."""

    since: datetime
    interval: float
    window: float

    @property
    def looks_per_window(self) -> int:
        """Looks a window holds (its last one may end before the window does)."""
        return max(1, math.floor(self.window / self.interval))

    def _instant(self, window: int, look: int) -> datetime:
        return self.since + timedelta(seconds=window * self.window + look * self.interval)

    def latest(self, now: datetime) -> GuardLook | None:
        """The last look at or before `now`; None before the first one."""
        elapsed = (now - self.since).total_seconds()
        if elapsed < self.interval:
            return None
        window = math.floor(elapsed / self.window)
        look = min(
            self.looks_per_window, math.floor((elapsed - window * self.window) / self.interval)
        )
        if look == 0:
            window, look = window - 1, self.looks_per_window
        times = tuple(j * self.interval / self.window for j in range(1, look + 1))
        return GuardLook(
            window_start=self._instant(window, 0),
            at=self._instant(window, look),
            index=look,
            times=times,
        )

    def next_after(self, now: datetime) -> datetime:
        """The first look strictly after `now`."""
        elapsed = max(0.0, (now - self.since).total_seconds())
        window = math.floor(elapsed / self.window)
        look = math.floor((elapsed - window * self.window) / self.interval) + 1
        if look > self.looks_per_window:
            window, look = window + 1, 1
        return self._instant(window, look)


class DriftVerdict(StrEnum):
    """What one look says about production's acceptance."""

    NONE = "None"  # too little data, or the bound straddles the threshold
    DRIFTED = "Drifted"  # the upper bound is below the threshold
    ABOVE = "Above"  # the lower bound is above the threshold (a drift has passed)


@dataclass(frozen=True)
class DriftCheck:
    """A look's verdict with its numbers (bounds are None when there was too little data)."""

    verdict: DriftVerdict
    alpha: float | None = None
    lower: float | None = None
    upper: float | None = None
    blocks: int = 0
    draft_tokens: float = 0.0
    critical: float = math.inf


@dataclass(frozen=True)
class BlockRatio:
    """A ratio of sums over time blocks with its anytime-valid bounds at one look."""

    value: float
    lower: float
    upper: float
    blocks: int
    critical: float


def block_ratio(
    numerators: list[float], denominators: list[float], error: float, times: tuple[float, ...]
) -> BlockRatio:
    """sum(numerators) / sum(denominators) over blocks, bounded at this look's critical
    value of the window's sequential boundary (cluster-robust, Newey-West, Student's t at
    blocks - 1; see the module docstring), clipped to [0, 1]. Shared by the acceptance and
    the latency halves of the guard: both are proportions of a block-clustered count."""
    total = sum(denominators)
    value = sum(numerators) / total
    residuals = [n - value * d for n, d in zip(numerators, denominators, strict=True)]
    count = len(residuals)
    variance = count / (count - 1) * serial_sum_of_squares(residuals) / (total * total)
    critical = t_critical(critical_values(times, error)[-1], count - 1)
    margin = critical * math.sqrt(variance)
    return BlockRatio(value, max(0.0, value - margin), min(1.0, value + margin), count, critical)


def check_drift(
    blocks: tuple[AcceptanceBlock, ...],
    threshold: float,
    error: float,
    times: tuple[float, ...],
    min_draft_tokens: float,
) -> DriftCheck:
    """Judge production's alpha over `blocks` against `threshold` at the look `times[-1]`.

    `error` is the one-sided error of a whole window; `times` are the information times
    of the window's looks so far (this one last), so the bound is held at this look's
    critical value of the sequential boundary (see the module docstring).
    """
    used = [b for b in blocks if b.draft_tokens > 0]
    drafts = sum(b.draft_tokens for b in used)
    if len(used) < MIN_BLOCKS or drafts < min_draft_tokens or not times:
        return DriftCheck(DriftVerdict.NONE, blocks=len(used), draft_tokens=drafts)
    ratio = block_ratio(
        [b.accepted_tokens for b in used], [b.draft_tokens for b in used], error, times
    )
    verdict = DriftVerdict.NONE
    if ratio.upper < threshold:
        verdict = DriftVerdict.DRIFTED
    elif ratio.lower > threshold:
        verdict = DriftVerdict.ABOVE
    return DriftCheck(
        verdict, ratio.value, ratio.lower, ratio.upper, ratio.blocks, drafts, ratio.critical
    )
