"""Confidence bounds the gates rest on: standard library only, no numpy or scipy.

Every bound is one-sided at a given `error`, the one the stage's sequential boundary allows
that look: order-statistic quantile bounds (independent samples), Wilson bounds on
proportions; clustered samples use `clustered`. More: docs/internals.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from specdecode.domain.sketch import Sketch, bucket_lower, bucket_upper, bucket_value


@dataclass(frozen=True)
class Interval:
    """A point estimate with a lower and an upper one-sided confidence bound."""

    value: float
    lower: float
    upper: float
    samples: int


def ratio_interval(numerator: Interval, denominator: Interval) -> Interval:
    """numerator / denominator, with bounds from the extremes of both intervals.

    Why the extremes: each interval holds with its own confidence, so both holding (the
    Bonferroni event) bounds the ratio between low/high and high/low.
    """
    return Interval(
        value=numerator.value / denominator.value,
        lower=numerator.lower / denominator.upper,
        upper=numerator.upper / denominator.lower,
        samples=min(numerator.samples, denominator.samples),
    )


def z_one_sided(error: float) -> float:
    """The standard normal quantile a one-sided bound at `error` needs."""
    return NormalDist().inv_cdf(1.0 - error)


def _binomial_cdf_reaches(n: int, p: float, target: float) -> int:
    """The smallest m with P(Binomial(n, p) <= m) >= target.

    Terms are computed in log space with lgamma, so n in the millions is fine; the walk
    stops near n*p + a few standard deviations, which is short for the tails we need.
    """
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n_fact = math.lgamma(n + 1)
    cdf = 0.0
    for m in range(n + 1):
        log_pmf = log_n_fact - math.lgamma(m + 1) - math.lgamma(n - m + 1)
        cdf += math.exp(log_pmf + m * log_p + (n - m) * log_q)
        if cdf >= target:
            return m
    return n


def quantile_rank_bounds(n: int, q: float, error: float) -> tuple[int, int] | None:
    """1-based ranks (lower, upper) of order statistics bounding the q-quantile.

    P(X_(lower) <= xi_q) >= 1 - error and P(X_(upper) >= xi_q) >= 1 - error, for any
    continuous distribution. C = number of samples above xi_q ~ Binomial(n, 1 - q):
    X_(r) <= xi_q iff C <= n - r. None when n is too small for such ranks to exist.
    """
    if n < 1:
        return None
    above = 1.0 - q
    # Lower: smallest m with P(C <= m) >= 1 - error; rank n - m.
    m_lower = _binomial_cdf_reaches(n, above, 1.0 - error)
    # Upper: largest c with P(C <= c - 1) <= error. The walk gives the smallest c_first
    # with cdf(c_first) >= error, so cdf(c_first - 1) < error and c = c_first (ties with
    # exactly `error` are resolved conservatively).
    c_upper = _binomial_cdf_reaches(n, above, error)
    lower_rank, upper_rank = n - m_lower, n - c_upper + 1
    if lower_rank < 1 or upper_rank > n or c_upper < 1:
        return None
    return lower_rank, upper_rank


def min_samples_for_quantile(q: float, error: float) -> int:
    """Fewest samples for which an upper order-statistic bound on the q-quantile exists.

    The largest sample bounds xi_q from above with probability 1 - q^n, so n >= log(error)
    / log(q).
    """
    return math.ceil(math.log(error) / math.log(q))


def sketch_quantile_interval(sketch: Sketch, q: float, error: float) -> Interval | None:
    """The q-quantile of a sketch with order-statistic bounds widened to bucket edges.

    The order-statistic ranks of `quantile_rank_bounds`; the r-th smallest sample lies in a
    known bucket, so the lower bound takes that bucket's lower edge and the upper bound its
    upper edge: coverage is kept, and the sketch's 0.5 % resolution only widens the interval.
    """
    n = sketch.total
    ranks = quantile_rank_bounds(n, q, error)
    if ranks is None:
        return None
    point_rank = min(n, max(1, math.ceil(q * n)))
    return Interval(
        value=bucket_value(sketch.bucket_of_rank(point_rank)),
        lower=bucket_lower(sketch.bucket_of_rank(ranks[0])),
        upper=bucket_upper(sketch.bucket_of_rank(ranks[1])),
        samples=n,
    )


def wilson_bounds(p: float, total: float, error: float) -> tuple[float, float]:
    """One-sided Wilson score bounds of a proportion p observed over `total` trials."""
    z = z_one_sided(error)
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_interval(events: int, total: int, error: float) -> Interval | None:
    """A proportion with one-sided Wilson score bounds; None when there is nothing to count."""
    if total <= 0:
        return None
    p = events / total
    lower, upper = wilson_bounds(p, total, error)
    return Interval(value=p, lower=lower, upper=upper, samples=total)
