"""The acceptance bound from the counters alone: Mirror traffic, which has no streamed chunks.

Why no assumed correlation: Mirror has no load pods to measure drafts' correlation within a
request, so alpha is bounded like a proportion over n_eff = D / d_max trials, valid however
a request's drafts correlate; d_max comes from vLLM's request-length histogram (unknown:
no bound, Inconclusive). The derivation: docs/internals.md.
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
