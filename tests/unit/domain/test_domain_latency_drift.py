"""The latency half of the drift guard: production's share of step-ITL observations above
the bucket edge at the line (the promoted config's figure at the analysis x (1 +
tolerance)), judged on time blocks, anytime-valid within a window of looks; no verdict on
missing data."""

from __future__ import annotations

import math
import random
from bisect import bisect_left

import pytest

from specdecode.domain.clustered import serial_sum_of_squares, t_critical
from specdecode.domain.drift import MIN_BLOCKS
from specdecode.domain.latency_drift import (
    LatencyReference,
    LatencyVerdict,
    check_latency_drift,
    tail_edge,
)
from specdecode.domain.observations import StepHistogram
from specdecode.domain.sequential import critical_values
from specdecode.domain.step_histogram import histogram_quantile

pytestmark = pytest.mark.unit

# vLLM's inter_token_latency_seconds buckets (../shared/reference/vllm.md)
EDGES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5)
BOUNDS = (*EDGES, math.inf)
ERROR = 0.05
TOLERANCE = 0.4
ONE_LOOK = (1.0,)
BATCH = 8  # requests per engine step: each records the same step duration


def _reference(seconds: float, quantile: float = 0.99) -> LatencyReference:
    return LatencyReference(seconds, None, quantile, ERROR, "tail-latency", "p99-itl")


def _histogram(durations: list[float], batch: int = BATCH) -> StepHistogram:
    """Step durations as vLLM counts them: `batch` observations per step, cumulative."""
    per_bucket = [0.0] * len(BOUNDS)
    for duration in durations:
        per_bucket[bisect_left(BOUNDS, duration)] += batch
    running, cumulative = 0.0, []
    for count in per_bucket:
        running += count
        cumulative.append(running)
    return StepHistogram(BOUNDS, tuple(cumulative))


def _steps(rng: random.Random, count: int, median: float, scale: float = 1.0) -> list[float]:
    """One block's step durations: lognormal (sigma 0.35) around a median that the
    block's traffic mix moves (sd 10 %), times `scale` (2.0: the tail shifted 2x)."""
    block_median = median * math.exp(rng.gauss(0.0, 0.1))
    return [scale * block_median * math.exp(rng.gauss(0.0, 0.35)) for _ in range(count)]


def _two_edge_block(observations: float, above: float, edge: float) -> StepHistogram:
    return StepHistogram((edge, math.inf), (observations - above, observations))


def test_the_edge_is_the_first_bucket_bound_at_or_above_the_line() -> None:
    blocks = [StepHistogram(BOUNDS, tuple(float(i) for i in range(len(BOUNDS))))]
    assert tail_edge(blocks, 0.042) == 0.05  # never the 0.025 below it
    assert tail_edge(blocks, 0.05) == 0.05
    assert tail_edge(blocks, 9.0) is None  # beyond the last finite bucket: cannot judge


def _reference_p99(rng: random.Random) -> float:
    """The analysis' figure: the interpolated P99 of a long steady histogram."""
    figure = histogram_quantile(_histogram(_steps(rng, 40000, 0.03)), 0.99)
    assert figure is not None
    return figure


def test_a_tail_shifted_twice_is_a_drift_and_a_steady_one_is_below() -> None:
    rng = random.Random(7)
    reference = 0.066  # the steps' P99 (70 ms) as the buckets interpolate it; edge 0.1 s
    steady = tuple(_histogram(_steps(rng, 250, 0.03)) for _ in range(10))
    shifted = tuple(_histogram(_steps(rng, 250, 0.03, scale=2.0)) for _ in range(10))
    drifted = check_latency_drift(shifted, _reference(reference), TOLERANCE, ONE_LOOK)
    assert drifted.verdict is LatencyVerdict.DRIFTED
    assert drifted.edge == 0.1 and drifted.line == pytest.approx(reference * (1 + TOLERANCE))
    assert drifted.lower is not None and drifted.lower > 0.01
    assert drifted.blocks == 10 and drifted.observations == 10 * 250 * BATCH
    calm = check_latency_drift(steady, _reference(reference), TOLERANCE, ONE_LOOK)
    assert calm.verdict is LatencyVerdict.BELOW
    assert calm.upper is not None and calm.upper < 0.01


def test_the_edge_not_the_line_is_judged_so_a_shift_short_of_the_edge_is_not_called() -> None:
    """The resolution limit: an analysis figure of 73 ms puts the line at 102 ms and the
    edge at 150 ms; production's P99 doubled to about 133 ms is past the line but not past
    the edge, and only the edge can be judged without assuming a shape inside a bucket."""
    rng = random.Random(7)
    shifted = tuple(_histogram(_steps(rng, 250, 0.03, scale=2.0)) for _ in range(10))
    check = check_latency_drift(shifted, _reference(0.073), TOLERANCE, ONE_LOOK)
    assert check.edge == 0.15
    assert check.verdict is not LatencyVerdict.DRIFTED


@pytest.mark.parametrize(
    "blocks",
    [
        tuple(_two_edge_block(2000, 200, 0.05) for _ in range(MIN_BLOCKS - 1)),  # few blocks
        tuple(_two_edge_block(100, 10, 0.05) for _ in range(12)),  # too few observations
        tuple(StepHistogram((0.05, math.inf), (0.0, 0.0)) for _ in range(12)),  # idle
        tuple(StepHistogram((0.01, math.inf), (1800.0, 2000.0)) for _ in range(12)),  # no edge
        (),  # no series at all
    ],
)
def test_missing_data_is_no_verdict(blocks: tuple[StepHistogram, ...]) -> None:
    check = check_latency_drift(blocks, _reference(0.03), TOLERANCE, ONE_LOOK)
    assert check.verdict is LatencyVerdict.NONE


def _bernoulli(rng: random.Random, trials: int, p: float) -> int:
    """Binomial(trials, p), exactly, by geometric skips (fast for small p)."""
    if p <= 0.0:
        return 0
    if p >= 1.0:
        return trials
    log_q, hits, position = math.log1p(-p), 0, -1
    while True:
        position += int(math.log(1.0 - rng.random()) / log_q) + 1
        if position >= trials:
            return hits
        hits += 1


def _window_at_the_line(rng: random.Random, blocks: int, allowed: float) -> list[StepHistogram]:
    """A production exactly at the line: its long-run share above the edge is `allowed`.
    Each block's traffic mix gives it its own share (lognormal, sd 0.3 on the log scale,
    mean exactly `allowed`), steps per block vary, and every step counts BATCH equal
    observations (the dependence the block unit absorbs)."""
    out = []
    for _ in range(blocks):
        share = allowed * math.exp(rng.gauss(0.0, 0.3) - 0.045)
        steps = max(1, round(rng.gauss(250, 25)))
        above = BATCH * _bernoulli(rng, steps, min(1.0, share))
        out.append(_two_edge_block(BATCH * steps, above, 0.05))
    return out


def _fixed_bound_drifts(blocks: tuple[StepHistogram, ...], allowed: float) -> bool:
    """The control: the same block estimator at a fixed one-look 95 % bound (z = 1.645)."""
    totals = [b.cumulative_counts[-1] for b in blocks]
    above = [b.cumulative_counts[-1] - b.cumulative_counts[0] for b in blocks]
    n = sum(totals)
    share = sum(above) / n
    residuals = [a - share * t for a, t in zip(above, totals, strict=True)]
    se = math.sqrt(len(blocks) / (len(blocks) - 1) * serial_sum_of_squares(residuals)) / n
    return share - t_critical(1.6448536, len(blocks) - 1) * se > allowed


def _observation_bound_drifts(
    blocks: tuple[StepHistogram, ...], allowed: float, times: tuple[float, ...]
) -> bool:
    """The other control: the guard's sequential boundary, but every observation taken as
    independent (a binomial standard error on all of them): the wrong unit."""
    n = sum(b.cumulative_counts[-1] for b in blocks)
    share = sum(b.cumulative_counts[-1] - b.cumulative_counts[0] for b in blocks) / n
    critical = critical_values(times, ERROR)[-1]
    return share - critical * math.sqrt(share * (1 - share) / n) > allowed


@pytest.mark.parametrize("looks", [3, 10])
def test_false_drift_at_the_line_stays_under_the_error_and_a_fixed_bound_does_not(
    looks: int,
) -> None:
    """Seeded: 2000 windows of 30 blocks of a production sitting exactly at the line (its
    P99 exactly at the edge), looked at `looks` times each. The guard's false-drift rate
    per window is consistent with at most the nominal 5 % (within 2.58 standard errors
    above it; measured 2.3 % at 3 looks, 2.05 % at 10), and a fixed-sample bound looked at
    every interval is above 5 % (measured 6.3 % at 3 looks, only just; 8.5 % at 10, beyond
    the 2.58 standard errors). Seeds 1 and 2 (not run here): guard 2.95 % and 2.7 % at 3
    looks, 2.4 % and 2.2 % at 10; control 7.3 % and 5.85 %, 9.85 % and 8.05 %. The second
    control keeps the sequential boundary but takes the observation as the unit (a
    binomial bound on all observations): measured 40 % at 3 looks, 49.5 % at 10."""
    rng = random.Random(20261127)
    windows, per_look, allowed = 2000, 30 // looks, 0.01
    reference = _reference(0.035)  # the line, 0.049 s, is judged at the 0.05 s edge
    guard = control = per_token = 0
    for _ in range(windows):
        blocks = _window_at_the_line(rng, 30, allowed)
        guard_hit = control_hit = per_token_hit = False
        for j in range(1, looks + 1):
            seen = tuple(blocks[: j * per_look])
            times = tuple(i / looks for i in range(1, j + 1))
            check = check_latency_drift(seen, reference, TOLERANCE, times)
            guard_hit = guard_hit or check.verdict is LatencyVerdict.DRIFTED
            if len(seen) >= MIN_BLOCKS:
                control_hit = control_hit or _fixed_bound_drifts(seen, allowed)
            per_token_hit = per_token_hit or _observation_bound_drifts(seen, allowed, times)
        guard += guard_hit
        control += control_hit
        per_token += per_token_hit
    slack = 2.58 * math.sqrt(ERROR * (1 - ERROR) / windows)  # 99 %, one-sided: 0.0126
    assert guard / windows <= ERROR + slack, guard / windows
    assert control / windows > ERROR + (slack if looks == 10 else 0.0), control / windows
    assert per_token / windows > 0.3, per_token / windows


def test_a_tail_shifted_twice_is_found_within_four_looks_of_the_shift() -> None:
    """Seeded: 200 small productions (60 steps of 8 requests per block) at the default
    grid (3 looks per window of 30 blocks: a look every 10 blocks) whose steps all take
    twice as long from a random block of their first window on. Every one is called
    Drifted, none before the shift, at most three looks after the first look whose blocks
    include it (a window that straddles the shift mixes both tails; the next window starts
    afresh). Measured delays in looks: 0: 17, 1: 151, 2: 31, 3: 1."""
    rng = random.Random(20261128)
    reference = _reference(_reference_p99(rng))
    delays = []
    for _ in range(200):
        shift = rng.randrange(30)
        blocks = [_histogram(_steps(rng, 60, 0.03, 2.0 if i >= shift else 1.0)) for i in range(60)]
        found = None
        for look in range(1, 7):  # two windows of three looks
            index = look if look <= 3 else look - 3
            seen = tuple(blocks[(look - index) * 10 : look * 10])
            times = tuple(i / 3 for i in range(1, index + 1))
            check = check_latency_drift(seen, reference, TOLERANCE, times)
            if check.verdict is LatencyVerdict.DRIFTED:
                found = look
                break
        assert found is not None
        first_after = shift // 10 + 1  # the first look whose blocks include the shift
        assert found >= first_after
        delays.append(found - first_after)
    assert max(delays) <= 3, sorted(delays)
    assert sum(d <= 1 for d in delays) >= 160  # most within one look: measured 168
