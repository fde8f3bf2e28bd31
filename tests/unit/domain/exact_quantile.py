"""The exact order-statistic interval of a quantile: the known truth the sketch is held to.

The operator only ever bounds quantiles of sketches (`stats.sketch_quantile_interval`) or
of bucketed histograms; the exact interval over the raw samples is what those bounds must
contain, so it lives with the tests that compare against it, not in the operator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from specdecode.domain.stats import Interval, quantile_rank_bounds


def quantile_interval(samples: Sequence[float], q: float, error: float) -> Interval | None:
    """The empirical q-quantile of `samples` (any order) with order-statistic bounds at
    `error`; None when too few samples for a bound."""
    n = len(samples)
    ranks = quantile_rank_bounds(n, q, error)
    if ranks is None:
        return None
    ordered = sorted(samples)
    return Interval(
        value=ordered[min(n, max(1, math.ceil(q * n))) - 1],
        lower=ordered[ranks[0] - 1],
        upper=ordered[ranks[1] - 1],
        samples=n,
    )
