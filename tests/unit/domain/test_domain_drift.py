"""The drift check: production's alpha surely below its threshold, judged on time blocks,
anytime-valid within a window of looks; no verdict on missing data."""

from __future__ import annotations

import math
import random
from datetime import timedelta

import pytest
from domain_fixtures import T0

from specdecode.domain.clustered import serial_sum_of_squares, t_critical
from specdecode.domain.drift import (
    MIN_BLOCKS,
    AcceptanceBlock,
    DriftVerdict,
    GuardGrid,
    block_seconds,
    can_judge,
    check_drift,
)

pytestmark = pytest.mark.unit

THRESHOLD = 0.2
ERROR = 0.05
ONE_LOOK = (1.0,)


def _blocks(alpha: float, count: int, tokens: float = 3000.0) -> tuple[AcceptanceBlock, ...]:
    """Blocks whose alpha alternates slightly around `alpha` (a spread to estimate)."""
    return tuple(
        AcceptanceBlock(tokens, tokens * (alpha + (0.01 if i % 2 else -0.01))) for i in range(count)
    )


def test_collapsed_acceptance_is_a_drift_with_its_bounds() -> None:
    check = check_drift(_blocks(0.1, 12), THRESHOLD, ERROR, ONE_LOOK, 1000)
    assert check.verdict is DriftVerdict.DRIFTED
    assert check.alpha == pytest.approx(0.1)
    assert check.lower is not None and check.upper is not None
    assert check.lower < 0.1 < check.upper < THRESHOLD
    assert check.blocks == 12


def test_healthy_acceptance_is_above_and_a_straddling_one_says_nothing() -> None:
    assert check_drift(_blocks(0.5, 12), THRESHOLD, ERROR, ONE_LOOK, 1000).verdict is (
        DriftVerdict.ABOVE
    )
    noisy = tuple(
        AcceptanceBlock(3000.0, 3000.0 * (0.19 + (0.15 if i % 2 else -0.15))) for i in range(12)
    )
    assert check_drift(noisy, THRESHOLD, ERROR, ONE_LOOK, 1000).verdict is DriftVerdict.NONE


@pytest.mark.parametrize(
    ("blocks", "min_tokens"),
    [
        (_blocks(0.05, MIN_BLOCKS - 1), 1000),  # too few blocks
        (_blocks(0.05, 12, tokens=50.0), 1000),  # too few draft tokens
        ((*_blocks(0.05, 4), *(AcceptanceBlock(0.0, 0.0),) * 20), 100),  # idle blocks
        ((), 0),  # no counters at all (no traffic, or no series yet)
    ],
)
def test_missing_data_is_no_verdict(blocks: tuple[AcceptanceBlock, ...], min_tokens: int) -> None:
    assert check_drift(blocks, THRESHOLD, ERROR, ONE_LOOK, min_tokens).verdict is DriftVerdict.NONE


def test_an_early_look_of_a_window_holds_its_bound_wider() -> None:
    early = check_drift(_blocks(0.15, 12), THRESHOLD, ERROR, (1 / 3,), 1000)
    last = check_drift(_blocks(0.15, 12), THRESHOLD, ERROR, (1 / 3, 2 / 3, 1.0), 1000)
    assert early.critical > last.critical > 1.0


def test_the_grid_looks_every_interval_in_windows_from_the_phase_start() -> None:
    grid = GuardGrid(since=T0, interval=300, window=900)

    def seconds(offset: float) -> tuple[float, float, int] | None:
        look = grid.latest(T0 + timedelta(seconds=offset))
        if look is None:
            return None
        start = (look.window_start - T0).total_seconds()
        return start, (look.at - T0).total_seconds(), look.index

    assert seconds(299) is None
    assert seconds(300) == (0, 300, 1)
    assert seconds(899) == (0, 600, 2)
    assert seconds(1199) == (0, 900, 3)  # the window's last look until the next window's first
    assert seconds(1200) == (900, 1200, 1)
    assert (grid.next_after(T0) - T0).total_seconds() == 300
    assert (grid.next_after(T0 + timedelta(seconds=900)) - T0).total_seconds() == 1200
    last = grid.latest(T0 + timedelta(seconds=900))
    assert last is not None and last.times == pytest.approx((1 / 3, 2 / 3, 1.0))


def test_blocks_are_a_thirtieth_of_the_window_and_at_least_five_seconds() -> None:
    assert block_seconds(900) == 30
    assert block_seconds(60) == 5
    # increase() needs two samples in a block: at least four scrape intervals
    assert block_seconds(900, 15) == 60 and block_seconds(900, 30) == 120
    assert can_judge(900, 15) and can_judge(50, 1)
    assert not can_judge(300, 15) and not can_judge(30, 0)  # fewer than MIN_BLOCKS blocks


def _window_at_threshold(rng: random.Random, blocks: int) -> list[AcceptanceBlock]:
    """A production exactly at the threshold: each block's traffic mix gives it its own
    alpha (sd 0.04 around 0.2, independent between blocks), draft tokens vary, and the
    tokens of a block are overdispersed (clustered in requests: 4x the binomial variance)."""
    out = []
    for _ in range(blocks):
        alpha = min(1.0, max(0.0, rng.gauss(THRESHOLD, 0.04)))
        tokens = float(max(1, round(rng.gauss(3000, 160))))
        spread = math.sqrt(tokens * alpha * (1 - alpha) * 4)
        out.append(
            AcceptanceBlock(tokens, min(tokens, max(0.0, rng.gauss(alpha * tokens, spread))))
        )
    return out


def _fixed_bound_drifts(blocks: tuple[AcceptanceBlock, ...]) -> bool:
    """The control: the same block estimator at a fixed one-look 95 % bound (z = 1.645)."""
    drafts = sum(b.draft_tokens for b in blocks)
    alpha = sum(b.accepted_tokens for b in blocks) / drafts
    residuals = [b.accepted_tokens - alpha * b.draft_tokens for b in blocks]
    n = len(blocks)
    se = math.sqrt(n / (n - 1) * serial_sum_of_squares(residuals)) / drafts
    return alpha + t_critical(1.6448536, n - 1) * se < THRESHOLD


@pytest.mark.parametrize("looks", [3, 10])
def test_false_drift_at_the_threshold_stays_under_the_error_and_a_fixed_bound_does_not(
    looks: int,
) -> None:
    """Seeded: 2000 windows of 30 blocks of a production sitting exactly at the threshold,
    looked at `looks` times each. The guard's false-drift rate per window is consistent
    with at most the nominal 5 % (its excess over 5 % within 2.58 standard errors: at a
    true rate of exactly 5 % the observed one scatters around it, 4 of 10 seeds fell just
    above), and a fixed-sample bound looked at every interval is far above it."""
    rng = random.Random(20261126)
    windows, per_look = 2000, 30 // looks
    guard = control = 0
    for _ in range(windows):
        blocks = _window_at_threshold(rng, 30)
        guard_hit = control_hit = False
        for j in range(1, looks + 1):
            seen = tuple(blocks[: j * per_look])
            times = tuple(i / looks for i in range(1, j + 1))
            check = check_drift(seen, THRESHOLD, ERROR, times, 1000)
            guard_hit = guard_hit or check.verdict is DriftVerdict.DRIFTED
            if len(seen) >= MIN_BLOCKS:
                control_hit = control_hit or _fixed_bound_drifts(seen)
        guard += guard_hit
        control += control_hit
    slack = 2.58 * math.sqrt(ERROR * (1 - ERROR) / windows)  # 99 %, one-sided: 0.0126
    assert guard / windows <= ERROR + slack
    assert control / windows > ERROR + slack  # measured 0.094 (3 looks), 0.126 (10)
