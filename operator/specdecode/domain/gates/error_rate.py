"""The ErrorRate gate: the candidate's failure rate minus the baseline's, Newcombe bounds.

Why against the baseline: both sides replay the same shadow requests, so what a speculative
config adds is the difference of the two failure proportions; what fails on both sides is
not the candidate's fault. Requests are the unit; outcomes come from the load pods under
Prompts (a hung request counts as failed, `domain.open_requests`) and from vLLM's own
counters under Mirror (`mirror_outcomes`). More: docs/internals.md.
"""

from __future__ import annotations

import math
from dataclasses import replace

from specdecode.domain.gate_measures import (
    Measurement,
    incomplete_window,
    judge_at_most,
    judged,
    metric_error,
)
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates.mirror_outcomes import mirror_counts, unaccounted_requests
from specdecode.domain.gates.registry import GateMeasure, Look, Need, TuningFigure, register
from specdecode.domain.observations import (
    EngineOutcomePair,
    LatencySamples,
    MetricError,
    StageObservations,
)
from specdecode.domain.open_requests import failed_in_flight, silence_bound
from specdecode.domain.stats import Interval, wilson_interval
from specdecode.vocabulary import GateType, GateVerdict


def failure_difference(
    candidate: tuple[int, int], baseline: tuple[int, int], error: float
) -> Interval | None:
    """(failed, total) of each side: p_c - p_b with Newcombe's hybrid score bounds."""
    cand = wilson_interval(*candidate, error)
    base = wilson_interval(*baseline, error)
    if cand is None or base is None:
        return None
    value = cand.value - base.value
    lower = value - math.hypot(cand.value - cand.lower, base.upper - base.value)
    upper = value + math.hypot(cand.upper - cand.value, base.value - base.lower)
    return Interval(value, lower, upper, min(cand.samples, base.samples))


def _counts(side: LatencySamples | None, silence: float | None) -> tuple[int, int, int]:
    """(failed, total, of them in flight) of a side, its failed requests in flight included."""
    if side is None:
        return 0, 0, 0
    flying = failed_in_flight(side, silence)
    failed = side.requests_failed + flying
    return failed, side.requests_ok + failed, flying


# A baseline failing more than this share (at its lower bound) is unhealthy: the difference
# from it says nothing about the candidate (two equally broken sides differ by zero), so
# the candidate's own failure share is held to maxErrorRate instead.
UNHEALTHY_BASELINE = 0.05


@register(GateType.ERROR_RATE)
class ErrorRateGate(GateMeasure):
    """Pass when the difference's upper bound <= maxErrorRate; fail when its lower exceeds."""

    higher_is_better = False  # a ceiling on the extra failed share
    statistic = "candidate minus baseline failed share of the same requests"
    judged_against = ("max_error_rate",)
    tuning_figure = TuningFigure.ERRORS

    def needs(self, gate: GateParams) -> frozenset[Need]:
        """Request outcomes: the load pods' (Prompts), or the engines' counters (Mirror)."""
        return frozenset({Need.REQUEST_OUTCOMES, Need.ENGINE_OUTCOMES})

    def measure(self, gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
        """Candidate minus baseline failure proportion over the same shadow requests."""
        threshold = gate.number("max_error_rate")
        if look.mirror:
            return _judge_mirror(gate, seen, look)
        candidate, baseline = seen.candidate_latency, seen.baseline_latency
        if isinstance(candidate, MetricError):
            return metric_error(candidate)
        if isinstance(baseline, MetricError):
            return metric_error(baseline)
        if (unjudged := incomplete_window(threshold, baseline, candidate)) is not None:
            return unjudged
        return _judge_load(gate, candidate, baseline, look)


def _judge_load(
    gate: GateParams, candidate: LatencySamples | None, baseline: LatencySamples | None, look: Look
) -> Measurement:
    """Prompts: the load pods' outcomes, with each side's failed requests in flight (past
    the timeout, or silent past the baseline's silence bound) counted as failed."""
    silence = silence_bound(baseline)
    c_failed, c_total, c_flying = _counts(candidate, silence)
    b_failed, b_total, b_flying = _counts(baseline, silence)
    judged_counts = judge_counts(gate, (c_failed, c_total), (b_failed, b_total), look, "requests")
    if c_flying == 0 and b_flying == 0:
        return judged_counts
    over = "" if silence is None else f"silent over {silence:.1f} s or "
    note = f"; of them in flight, {over}past the timeout: {c_flying} / {b_flying}"
    return replace(judged_counts, reason=judged_counts.reason + note)


def _judge_mirror(gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
    """Mirror: the engines' counts, where a pass must hold with every request the counters
    leave unaccounted counted as failed (`mirror_outcomes.unaccounted_requests`)."""
    found = mirror_counts(seen, gate.number("max_error_rate"))
    if isinstance(found, Measurement):
        return found
    unit = "mirrored requests (engine counts)"
    counted = judge_counts(gate, *found, look, unit)
    pair = seen.engine_outcomes
    unaccounted = 0 if not isinstance(pair, EngineOutcomePair) else unaccounted_requests(pair)
    if counted.verdict is not GateVerdict.SUCCESSFUL or unaccounted == 0:
        return counted
    (c_failed, c_total), baseline = found
    worst = judge_counts(
        gate, (c_failed + unaccounted, c_total + unaccounted), baseline, look, unit
    )
    note = (
        f"{unaccounted} candidate requests unaccounted by the counters (in flight beyond the "
        f"baseline's, or short of its arrivals) counted as failed: {worst.reason}"
    )
    if worst.verdict is GateVerdict.SUCCESSFUL:
        return replace(worst, reason=note)
    return replace(worst, verdict=GateVerdict.INCONCLUSIVE, reason=note, close_call=False)


def judge_counts(
    gate: GateParams,
    candidate: tuple[int, int],
    baseline: tuple[int, int],
    look: Look,
    unit: str,
) -> Measurement:
    """The verdict on each side's (failed, total) requests (see the module docstring)."""
    threshold = gate.number("max_error_rate")
    (c_failed, c_total), (b_failed, b_total) = candidate, baseline
    needed = gate.effective_min_samples
    interval = failure_difference((c_failed, c_total), (b_failed, b_total), look.error)
    if interval is None or min(c_total, b_total) < needed:
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            f"{c_total} candidate / {b_total} baseline {unit}; {needed} each needed",
            threshold=threshold,
            samples=min(c_total, b_total),
        )
    c_rate, b_rate = c_failed / c_total, b_failed / b_total
    baseline_share = wilson_interval(b_failed, b_total, look.error)
    if baseline_share is not None and baseline_share.lower > UNHEALTHY_BASELINE:
        # Two broken sides differ by nothing: judge the candidate's own share instead.
        own = wilson_interval(c_failed, c_total, look.error)
        if own is not None:
            reason = (
                f"the baseline fails {b_rate:.4f} of the shadow requests (no yardstick): "
                f"the candidate's own failure rate {own.value:.4f} "
                f"[{own.lower:.4f}, {own.upper:.4f}] vs {threshold} over {c_total} {unit}"
            )
            return judged(
                judge_at_most(own, threshold),
                reason,
                own,
                threshold,
                baseline_value=b_rate,
                candidate_value=c_rate,
                units=c_total,
            )
    verdict = judge_at_most(interval, threshold)
    reason = (
        f"failure rate {c_rate:.4f} - baseline {b_rate:.4f} = {interval.value:.4f} "
        f"[{interval.lower:.4f}, {interval.upper:.4f}] vs {threshold} over "
        f"{c_total} / {b_total} {unit}"
    )
    return judged(
        verdict,
        reason,
        interval,
        threshold,
        baseline_value=b_rate,
        candidate_value=c_rate,
        units=min(c_total, b_total),
    )
