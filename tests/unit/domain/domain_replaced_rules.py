"""Rules the project replaced, frozen here as the controls of the tests that replaced them
(and `benchmarks/gates.py`'s "today" column): never imported by the operator.

`assumed_correlation_interval`: the counters' acceptance bound before issue 33, a Kish
design effect with an ASSUMED intra-request correlation RHO = 0.25 and request-length CV^2
0.25 (64 drafts per request when the request count was unknown), on the per-draft variance
from the per-position counters (worst case for [0, k] without them).
"""

from __future__ import annotations

import math

from specdecode.domain.stats import Interval, z_one_sided

RHO = 0.25
ASSUMED_DRAFTS_PER_REQUEST = 64.0
REQUEST_LENGTH_CV2 = 0.25


def design_effect(drafts: float, requests: float) -> float:
    """Variance inflation for drafts clustered in requests, at the assumed RHO."""
    per_request = drafts / requests if requests > 0 else ASSUMED_DRAFTS_PER_REQUEST
    return 1.0 + max(0.0, per_request * (1.0 + REQUEST_LENGTH_CV2) - 1.0) * RHO


def accepted_length_variance(
    drafts: float, k: int, mean_length: float, per_position_accepted: tuple[float, ...]
) -> float:
    """Variance of one draft's accepted length from the per-position counters."""
    worst_case = max(0.0, mean_length * (k - mean_length))
    if len(per_position_accepted) < k or drafts <= 0:
        return worst_case
    tail = [min(1.0, max(0.0, count / drafts)) for count in per_position_accepted[:k]]
    second_moment = sum((2 * i - 1) * p for i, p in enumerate(tail, start=1))
    variance = second_moment - mean_length**2
    if variance < 0 or variance > worst_case + 1e-9:
        return worst_case
    return variance


def assumed_correlation_interval(
    drafts: float,
    draft_tokens: float,
    accepted_tokens: float,
    per_position_accepted: tuple[float, ...],
    error: float,
    requests: float = 0.0,
) -> Interval | None:
    """alpha with one-sided bounds at `error` under the assumed correlation; None = no data."""
    if drafts <= 0 or draft_tokens <= 0:
        return None
    k = max(1, round(draft_tokens / drafts))
    alpha = min(1.0, max(0.0, accepted_tokens / draft_tokens))
    variance = accepted_length_variance(drafts, k, alpha * k, per_position_accepted)
    clustered = variance / drafts / (k * k) * design_effect(drafts, requests)
    margin = z_one_sided(error) * math.sqrt(clustered)
    return Interval(alpha, max(0.0, alpha - margin), min(1.0, alpha + margin), int(draft_tokens))
