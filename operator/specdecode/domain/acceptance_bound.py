"""The acceptance bound from the counters alone: Mirror traffic, which has no streamed chunks.

Under Prompts traffic `gates.acceptance` measures the correlation of drafts within a
request from the load pods' per-request moments. Mirror traffic has no load pods, so the
bound must hold whatever that correlation is: none is assumed (issue 33 removed an assumed
intra-request correlation, RHO = 0.25, which under-covered when requests differ widely).

Let request i contribute d_i drafts and a_i accepted tokens of its k d_i draft tokens, and
alpha = sum a_i / (k sum d_i). With requests as the independent units (a mirrored request),
the ratio's linearised variance is sum d_i^2 (alpha_i - alpha)^2 / D^2, D = sum d_i, with
alpha_i = a_i / (k d_i) in [0, 1] however the drafts of one request are correlated (all or
nothing included). Then sum d_i^2 (alpha_i - alpha)^2 <= d_max sum d_i (alpha_i - alpha)^2
<= d_max D alpha (1 - alpha), because the d-weighted variance of values in [0, 1] with mean
alpha is at most alpha (1 - alpha). So alpha is bounded like a proportion over
n_eff = D / d_max trials (Wilson score bounds at the look's error).

d_max comes from vLLM's own per-request histogram: a drafting step emits at least one
token, so d_i <= the request's generated tokens <= the upper edge of the highest bucket of
`vllm:request_generation_tokens` that the window's finished requests reached (vLLM's 1-2-5
buckets: the edge is at most 2.5x the longest request, which only widens the bound). No
histogram, or requests beyond its last finite edge, leaves d_max unknown: no bound (None),
and the gate is Inconclusive naming the series. What the histogram cannot show: a request
still running at the window's end, longer than every finished one, is counted by its
drafts but not its length (README, Mirror). The seeded simulation in
`tests/unit/domain/test_mirror_acceptance_bound.py` checks the error rate with
all-or-nothing requests of widely varying length, where the assumed correlation failed.
"""

from __future__ import annotations

from specdecode.domain.stats import Interval, wilson_bounds

REQUEST_LENGTH_SERIES = "vllm:request_generation_tokens"


def effective_trials(drafts: float, longest_request_tokens: float | None) -> float | None:
    """n_eff = D / d_max (see the module docstring); None when d_max is unknown."""
    if longest_request_tokens is None or longest_request_tokens <= 0 or drafts <= 0:
        return None
    return max(1.0, drafts / longest_request_tokens)


def acceptance_interval(
    drafts: float,
    draft_tokens: float,
    accepted_tokens: float,
    longest_request_tokens: float | None,
    error: float,
) -> Interval | None:
    """alpha with one-sided bounds at `error` and no assumed correlation; None = no data
    or no bound on the longest request (see the module docstring)."""
    trials = effective_trials(drafts, longest_request_tokens)
    if trials is None or draft_tokens <= 0:
        return None
    alpha = min(1.0, max(0.0, accepted_tokens / draft_tokens))
    lower, upper = wilson_bounds(alpha, trials, error)
    return Interval(value=alpha, lower=lower, upper=upper, samples=int(draft_tokens))
