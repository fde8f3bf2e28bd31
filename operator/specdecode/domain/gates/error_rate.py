"""The ErrorRate gate: the candidate's failed / total shadow requests, Wilson upper bound.

Requests are the unit: a failure is a whole request's outcome, and shadow requests are
sent independently of each other (a failing engine correlates them, which only pushes the
rate, and a Failed verdict, up).
"""

from __future__ import annotations

from specdecode.api.gate_spec import GateSpec, GateType
from specdecode.api.status import GateVerdict
from specdecode.domain.gate_measures import (
    Measurement,
    incomplete_window,
    judge_at_most,
    judged,
    metric_error,
)
from specdecode.domain.gates.registry import Look, Need, register
from specdecode.domain.observations import MetricError, StageObservations
from specdecode.domain.stats import wilson_interval


@register(GateType.ERROR_RATE)
class ErrorRateGate:
    """Pass when the Wilson upper bound <= maxErrorRate; fail when the lower bound exceeds."""

    def needs(self, gate: GateSpec) -> frozenset[Need]:
        """The candidate's request outcomes from the load pods."""
        return frozenset({Need.REQUEST_OUTCOMES})

    def measure(self, gate: GateSpec, seen: StageObservations, look: Look) -> Measurement:
        """Failed / total requests of the candidate's shadow load."""
        threshold = gate.number("max_error_rate")
        candidate = seen.candidate_latency
        if isinstance(candidate, MetricError):
            return metric_error(candidate)
        if (unjudged := incomplete_window(threshold, candidate)) is not None:
            return unjudged
        total = 0 if candidate is None else candidate.requests_ok + candidate.requests_failed
        needed = gate.effective_min_samples
        failed = 0 if candidate is None else candidate.requests_failed
        interval = wilson_interval(failed, total, look.error)
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
        return judged(
            verdict, reason, interval, threshold, candidate_value=interval.value, units=total
        )
