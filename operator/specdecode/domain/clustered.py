"""Cluster-robust estimates: the unit of inference is a cluster, never a sample.

Why: requests of a batch share engine steps and drafts share their prompt, so samples are
dependent and treating them as independent makes bounds too narrow. Time blocks (latency)
and requests (acceptance) are the clusters; a ratio of sums with sandwich variance and
Woodruff's quantile bounds, with Newey-West across neighbouring blocks and Student's t.
The estimators in full: docs/internals.md; measured: docs/measured.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from specdecode.domain.sketch import Sketch, bucket_lower, bucket_upper, bucket_value


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a cluster-robust standard error."""

    value: float
    se: float
    clusters: int  # independent units the standard error rests on
    samples: int  # samples (or weight) behind the estimate


def ratio_of_sums(
    clusters: int, sum_x: float, sum_y: float, sum_xx: float, sum_xy: float, sum_yy: float
) -> Estimate | None:
    """r = sum y / sum x with the sandwich variance, from per-cluster moment sums."""
    if clusters < 2 or sum_x <= 0:
        return None
    r = sum_y / sum_x
    residual = max(0.0, sum_yy - 2 * r * sum_xy + r * r * sum_xx)
    variance = clusters / (clusters - 1) * residual / (sum_x * sum_x)
    return Estimate(value=r, se=math.sqrt(variance), clusters=clusters, samples=round(sum_x))


def _share_above(blocks: Sequence[Sketch], index: int, total: int) -> tuple[float, float, int]:
    """Share of weight above the quantile, its cluster-robust variance, tail blocks.

    When no weight lies strictly above the quantile's bucket, that bucket counts half
    (mid-distribution convention): with tied values, as when a plain engine's steps are
    all alike, a side's whole median can sit in one bucket, and without this there would
    be no spread to estimate and the bound would never close. Otherwise only buckets
    strictly above count (the statistics `benchmarks/gates.py` measured). Tail blocks
    count only blocks with weight strictly above (what a P99 needs before it is trusted).
    """
    strictly_above = [sum(c for i, c in b.counts.items() if i > index) for b in blocks]
    above: list[float] = [float(a) for a in strictly_above]
    if not any(strictly_above):
        above = [b.counts.get(index, 0) / 2 for b in blocks]
    share = sum(above) / total
    residuals = [a - share * b.total for a, b in zip(above, blocks, strict=True)]
    count = len(blocks)
    variance = count / (count - 1) * serial_sum_of_squares(residuals) / (total * total)
    return share, variance, sum(1 for a in strictly_above if a > 0)


def newey_west_lag(clusters: int) -> int:
    """Lags of the HAC sum: Newey and West's (1994) rule, floor(4 (C / 100)^(2/9)).

    3 lags at 30 to 99 blocks, 4 at 100, 5 at 300 (a 600 s stage at the default 2 s blocks).
    """
    return math.floor(4.0 * math.pow(clusters / 100.0, 2.0 / 9.0))


def serial_sum_of_squares(residuals: Sequence[float]) -> float:
    """sum r^2 plus neighbouring blocks' covariance: Newey-West, never below sum r^2.

    Why: blocks are the unit of independence, but the engine behind them is one process:
    slow stretches (a backlog, a prefill wave, a request spanning ~4 blocks) can outlast a
    block. The Bartlett-weighted sum of products of residuals up to `newey_west_lag`
    blocks apart (time order) estimates that serial covariance (a HAC variance). Negative
    serial covariance (a rhythm that evens blocks out) is not used to narrow the bound: the
    result is at least the independent-blocks sum, so the correction can only widen.
    """
    plain = sum(r * r for r in residuals)
    lags = min(newey_west_lag(len(residuals)), len(residuals) - 1)
    serial = 0.0
    for lag in range(1, lags + 1):
        weight = 1.0 - lag / (lags + 1.0)
        serial += (
            2.0 * weight * sum(a * b for a, b in zip(residuals, residuals[lag:], strict=False))
        )
    return max(plain, plain + serial)


@dataclass(frozen=True)
class BlockQuantile:
    """A q-quantile over time blocks, and the spread of its tail share (Woodruff).

    `share_sd` is the standard deviation of the share of weight above the quantile, at the
    nominal share 1 - q: the blocks' measured design effect (at least 1) times the binomial
    variance q (1 - q) / n. Why at the nominal share and not the observed one: a tail that
    happened to be thin would otherwise also look precise (its variance shrinks with it), and
    the bound would be too narrow exactly when it errs.
    """

    merged: Sketch
    q: float
    index: int
    share_sd: float
    clusters: int
    tail_clusters: int

    @property
    def samples(self) -> int:
        """Samples (or weight) behind the estimate."""
        return self.merged.total

    @property
    def log_value(self) -> float:
        """log of the point estimate."""
        return math.log(bucket_value(self.index))

    def log_bounds(self, z: float) -> tuple[float, float]:
        """log bounds: the quantiles at q -+ z share_sd, to the outer edges of their buckets."""
        total = self.merged.total
        low_rank = math.floor((self.q - z * self.share_sd) * total)
        high_share = self.q + z * self.share_sd
        lower = bucket_lower(self.merged.bucket_of_rank(low_rank)) if low_rank >= 1 else 0.0
        if high_share * total > total - 1:
            upper = math.inf
        else:
            upper = bucket_upper(self.merged.bucket_of_rank(math.ceil(high_share * total)))
        return (math.log(lower) if lower > 0 else -math.inf), math.log(upper)


def block_quantile(blocks: Sequence[Sketch], merged: Sketch, q: float) -> BlockQuantile | None:
    """The q-quantile over blocks with its cluster-robust tail-share spread.

    `merged` is the blocks' union (callers have it cached). None with fewer than two
    non-empty blocks.
    """
    used = [b for b in blocks if b.total > 0]
    total = merged.total
    if len(used) < 2 or total <= 0:
        return None
    index = merged.bucket_of_rank(math.ceil(q * total))
    share, variance, tail_blocks = _share_above(used, index, total)
    nominal = q * (1 - q) / total
    observed = share * (1 - share) / total
    design_effect = max(1.0, variance / observed) if observed > 0 else math.inf
    return BlockQuantile(
        merged=merged,
        q=q,
        index=index,
        share_sd=math.sqrt(design_effect * nominal),
        clusters=len(used),
        tail_clusters=tail_blocks,
    )


def t_critical(z: float, degrees_of_freedom: int) -> float:
    """Student's t quantile at the normal quantile z (Cornish-Fisher, accurate for df >= 5).

    Why: a standard error estimated from few clusters is itself uncertain; t widens the
    bound just enough for that.
    """
    if math.isinf(z) or degrees_of_freedom <= 0:
        return math.inf
    nu = float(degrees_of_freedom)
    return (
        z
        + (z**3 + z) / (4 * nu)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * nu**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * nu**3)
    )
