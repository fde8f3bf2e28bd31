"""Acceptance and error-rate gate measures, and what every measure shares.

Each measure returns the statistic, its bounds, and the verdict they support.

Pure functions of the observations of the stage's measuring window and the per-look error
(`gates` computes that from the gate's confidence and the stage's number of looks).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from specdecode.api.gate_spec import GateSpec
from specdecode.api.status import GateVerdict
from specdecode.domain.acceptance_bound import acceptance_interval
from specdecode.domain.observations import AcceptanceCounts, LatencySamples, MetricError
from specdecode.domain.stats import Interval, wilson_interval

DEFAULT_MIN_ALPHA = 0.55
DEFAULT_MIN_DRAFT_TOKENS = 1000
DEFAULT_MAX_ERROR_RATE = 0.01
DEFAULT_MIN_REQUESTS = 20


@dataclass(frozen=True)
class Measurement:
    """What one look found, before the gate's counters are applied."""

    verdict: GateVerdict
    reason: str
    value: float | None = None
    lower_bound: float | None = None
    upper_bound: float | None = None
    threshold: float | None = None
    samples: int | None = None
    baseline_value: float | None = None
    candidate_value: float | None = None
    mean_acceptance_length: float | None = None  # 1 + accepted / drafts (tokens per step)
    acceptance_per_position: tuple[float, ...] = ()  # P(at least i+1 accepted) per draft


def judged(
    verdict: GateVerdict,
    reason: str,
    interval: Interval,
    threshold: float,
    baseline_value: float | None = None,
    candidate_value: float | None = None,
) -> Measurement:
    """A decided (or undecided) look that carries its interval's numbers into status."""
    return Measurement(
        verdict,
        reason,
        value=interval.value,
        lower_bound=interval.lower,
        upper_bound=interval.upper,
        threshold=threshold,
        samples=interval.samples,
        baseline_value=baseline_value,
        candidate_value=candidate_value,
    )


def metric_error(source: MetricError) -> Measurement:
    """A failed metric source: verdict Error, with its message."""
    return Measurement(GateVerdict.ERROR, f"metric source {source.source}: {source.message}")


def relation(verdict: GateVerdict, higher_is_better: bool) -> str:
    """How a judged value stands against its threshold in a reason: passed, failed or `~`."""
    passed, failed = (">=", "<") if higher_is_better else ("<=", ">")
    return {GateVerdict.SUCCESSFUL: passed, GateVerdict.FAILED: failed}.get(verdict, "~")


def judge_at_least(interval: Interval, threshold: float) -> GateVerdict:
    """Higher is better: pass on the lower bound, fail on the upper."""
    if interval.lower >= threshold:
        return GateVerdict.SUCCESSFUL
    if interval.upper < threshold:
        return GateVerdict.FAILED
    return GateVerdict.INCONCLUSIVE


def judge_at_most(interval: Interval, threshold: float) -> GateVerdict:
    """Lower is better: pass on the upper bound, fail on the lower."""
    if interval.upper <= threshold:
        return GateVerdict.SUCCESSFUL
    if interval.lower > threshold:
        return GateVerdict.FAILED
    return GateVerdict.INCONCLUSIVE


def measure_acceptance(
    gate: GateSpec, counts: AcceptanceCounts | MetricError | None, error: float
) -> Measurement:
    """alpha = accepted / draft tokens of the candidate, judged on its lower bound."""
    threshold = gate.min_alpha if gate.min_alpha is not None else DEFAULT_MIN_ALPHA
    if isinstance(counts, MetricError):
        return metric_error(counts)
    interval = None
    if counts is not None:
        interval = acceptance_interval(
            counts.drafts,
            counts.draft_tokens,
            counts.accepted_tokens,
            counts.per_position_accepted,
            error,
            counts.requests,
        )
    if interval is None:
        return Measurement(
            GateVerdict.INCONCLUSIVE, "no drafts yet: alpha undefined", threshold=threshold
        )
    needed = gate.min_draft_tokens or DEFAULT_MIN_DRAFT_TOKENS
    numbers = f"alpha {interval.value:.3f} [{interval.lower:.3f}, {interval.upper:.3f}]"
    verdict = judge_at_least(interval, threshold)
    if interval.samples < needed:
        verdict = GateVerdict.INCONCLUSIVE
        reason = f"{numbers} over {interval.samples} draft tokens (< {needed} needed)"
    else:
        reason = (
            f"{numbers} {relation(verdict, higher_is_better=True)} {threshold} "
            f"over {interval.samples} draft tokens"
        )
    found = judged(verdict, reason, interval, threshold, candidate_value=interval.value)
    assert counts is not None  # an interval exists only when drafts were counted
    return dataclasses.replace(
        found,
        mean_acceptance_length=1.0 + counts.accepted_tokens / counts.drafts,
        acceptance_per_position=tuple(n / counts.drafts for n in counts.per_position_accepted),
    )


def measure_error_rate(
    gate: GateSpec, candidate: LatencySamples | MetricError | None, error: float
) -> Measurement:
    """The candidate's failed / total shadow requests, judged on its Wilson upper bound."""
    threshold = gate.max_error_rate if gate.max_error_rate is not None else DEFAULT_MAX_ERROR_RATE
    if isinstance(candidate, MetricError):
        return metric_error(candidate)
    if candidate is not None and candidate.incomplete is not None:
        return Measurement(GateVerdict.INCONCLUSIVE, candidate.incomplete, threshold=threshold)
    total = 0 if candidate is None else candidate.requests_ok + candidate.requests_failed
    needed = gate.min_samples or DEFAULT_MIN_REQUESTS
    interval = None
    if candidate is not None:
        interval = wilson_interval(candidate.requests_failed, total, error)
    if interval is None or total < needed:
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            f"{total} requests; {needed} needed",
            threshold=threshold,
            samples=total,
        )
    verdict = judge_at_most(interval, threshold)
    reason = (
        f"error rate {interval.value:.4f} [{interval.lower:.4f}, {interval.upper:.4f}] vs "
        f"{threshold} over {total} requests"
    )
    return judged(verdict, reason, interval, threshold, candidate_value=interval.value)
