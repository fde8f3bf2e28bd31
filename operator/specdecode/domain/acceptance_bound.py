"""The acceptance bound from the counters alone: the fallback without streamed chunks.

Used when the load pods report no per-request acceptance (Mirror traffic, or no finished
request yet); otherwise `gates.acceptance` measures the correlation instead of assuming it.

A draft's accepted length L lies in 0..k. vLLM's per-position counters give
P(L >= i) = per_position_accepted[i-1] / drafts, hence E[L] = alpha k and
E[L^2] = sum_i (2i - 1) P(L >= i); without them, the worst case for a variable in [0, k]
with that mean, mean (k - mean). With independent drafts, SE(alpha) = sqrt(Var(L) / drafts) / k.

Drafts within one request share a prompt, so their accepted lengths are positively
correlated and that SE is too small. The variance is multiplied by Kish's design effect
for clusters of unequal size, 1 + (m (1 + CV^2) - 1) rho: m drafts per request (measured
as drafts / requests when the request count is known, else ASSUMED_DRAFTS_PER_REQUEST), a
request-length CV of 0.5, and an assumed intra-request correlation RHO = 0.25. That rho
means a spread of per-request alpha of about +-0.23 around 0.55 with k = 3, wider than the
prompt mixes we know of; long outputs (large m) widen the bound by themselves. The
assumption-free worst case would be rho = 1 (each request all-or-nothing), which costs
about 4x the samples of this choice; the seeded simulation in tests/unit/domain checks the
error rates under a per-request spread of alpha.
"""

from __future__ import annotations

import math

from specdecode.domain.stats import Interval, z_one_sided

RHO = 0.25
ASSUMED_DRAFTS_PER_REQUEST = 64.0  # 256 output tokens at ~4 tokens per step
REQUEST_LENGTH_CV2 = 0.25


def design_effect(drafts: float, requests: float) -> float:
    """Variance inflation for drafts clustered in requests."""
    per_request = drafts / requests if requests > 0 else ASSUMED_DRAFTS_PER_REQUEST
    return 1.0 + max(0.0, per_request * (1.0 + REQUEST_LENGTH_CV2) - 1.0) * RHO


def accepted_length_variance(
    drafts: float, k: int, mean_length: float, per_position_accepted: tuple[float, ...]
) -> float:
    """Variance of the accepted length L (0..k) of one draft.

    With the per-position counters, P(L >= i) = per_position_accepted[i-1] / drafts and
    E[L^2] = sum_i (2i - 1) P(L >= i). Without them (or if they are inconsistent), the worst
    case for a variable in [0, k] with this mean: mean * (k - mean).
    """
    worst_case = max(0.0, mean_length * (k - mean_length))
    if len(per_position_accepted) < k or drafts <= 0:
        return worst_case
    tail = [min(1.0, max(0.0, count / drafts)) for count in per_position_accepted[:k]]
    second_moment = sum((2 * i - 1) * p for i, p in enumerate(tail, start=1))
    variance = second_moment - mean_length**2
    if variance < 0 or variance > worst_case + 1e-9:
        return worst_case
    return variance


def acceptance_interval(
    drafts: float,
    draft_tokens: float,
    accepted_tokens: float,
    per_position_accepted: tuple[float, ...],
    error: float,
    requests: float = 0.0,
) -> Interval | None:
    """alpha with one-sided bounds at `error` (see the module docstring); None = no data."""
    if drafts <= 0 or draft_tokens <= 0:
        return None
    k = max(1, round(draft_tokens / drafts))
    alpha = min(1.0, max(0.0, accepted_tokens / draft_tokens))
    variance = accepted_length_variance(drafts, k, alpha * k, per_position_accepted)
    clustered = variance / drafts / (k * k) * design_effect(drafts, requests)
    margin = z_one_sided(error) * math.sqrt(clustered)
    return Interval(
        value=alpha,
        lower=max(0.0, alpha - margin),
        upper=min(1.0, alpha + margin),
        samples=int(draft_tokens),
    )
