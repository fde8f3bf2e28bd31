"""The TailLatency gate on vLLM's own step-ITL histogram (`itlDefinition: ServerStep`).

Why: with Mirror traffic the responses never reach the operator, so vLLM's
`inter_token_latency_seconds` buckets are the only inter-token latency. The order-statistic
ranks that bound the quantile are located in their buckets (edges bound the values).
Method and resolution: docs/internals.md.
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left

from specdecode.domain.gate_measures import (
    Measurement,
    judge_at_most,
    judged,
    metric_error,
    relation,
)
from specdecode.domain.gate_params import GateParams
from specdecode.domain.observations import (
    ENGINE_STEPS_SERIES,
    MetricError,
    ServerStepHistograms,
    StepHistogram,
)
from specdecode.domain.stats import (
    Interval,
    min_samples_for_quantile,
    quantile_rank_bounds,
    ratio_interval,
)
from specdecode.vocabulary import GateVerdict


def _monotone(counts: tuple[float, ...]) -> list[float]:
    """Cumulative counts made non-decreasing, as Prometheus does before interpolating.

    Why: each bucket's `increase()` is extrapolated on its own, so neighbours can disagree.
    """
    running, fixed = 0.0, []
    for count in counts:
        running = max(running, count)
        fixed.append(running)
    return fixed


def histogram_quantile(h: StepHistogram, q: float) -> float | None:
    """Prometheus's `histogram_quantile(q, ...)` for 0 < q < 1: linear inside the bucket.

    Why the same semantics: the point estimate must match what a dashboard shows for the
    same window. A rank in the +Inf bucket gives the largest finite bound, as in Prometheus;
    None without observations (Prometheus's NaN).
    """
    counts = _monotone(h.cumulative_counts)
    if len(counts) < 2 or counts[-1] <= 0:
        return None
    rank = q * counts[-1]
    bucket = bisect_left(counts, rank, hi=len(counts) - 1)  # first count >= rank, not +Inf
    if bucket == len(counts) - 1:
        return h.upper_bounds[-2]
    end = h.upper_bounds[bucket]
    if bucket == 0:
        return end if end <= 0 else end * rank / counts[0]
    start, below = h.upper_bounds[bucket - 1], counts[bucket - 1]
    return start + (end - start) * (rank - below) / (counts[bucket] - below)


def _step_counts(h: StepHistogram) -> list[int]:
    """Cumulative counts in engine steps when fewer steps than observations, else as counted.

    Why scale: a step of b requests is b equal observations, one independent draw; scaling
    by steps / observations counts each step once (exactly so for equal batches).
    """
    counts = _monotone(h.cumulative_counts)
    total = counts[-1] if counts else 0.0
    scale = h.steps / total if h.steps is not None and h.steps < total else 1.0
    return [round(count * scale) for count in counts]


def effective_samples(h: StepHistogram) -> int:
    """Independent observations the bound may count on: min(steps, observations), rounded."""
    counts = _step_counts(h)
    return counts[-1] if counts else 0


def quantile_bucket_interval(h: StepHistogram, q: float, error: float) -> Interval | None:
    """The q-quantile bounded by the bucket edges of its order-statistic ranks.

    Each bound holds with probability 1 - error for independent steps (independent
    observations when `steps` is unknown, which the gate never judges: see
    `measure_server_step_tail`) of any continuous distribution; the upper is
    math.inf when rank u falls in the +Inf bucket. Ranks are over the step-scaled counts
    (`_step_counts`), and `samples` is their total. None when too few for the ranks to
    exist. The value is interpolated (scaling does not move it).
    """
    counts = _step_counts(h)
    n = counts[-1] if counts else 0
    ranks = quantile_rank_bounds(n, q, error)
    value = histogram_quantile(h, q)
    if ranks is None or value is None:
        return None
    low_bucket, high_bucket = bisect_left(counts, ranks[0]), bisect_left(counts, ranks[1])
    lower = h.upper_bounds[low_bucket - 1] if low_bucket > 0 else 0.0
    upper = h.upper_bounds[high_bucket]
    return Interval(value=min(max(value, lower), upper), lower=lower, upper=upper, samples=n)


def _ratio(candidate: Interval, baseline: Interval) -> Interval:
    """candidate / baseline; a baseline bounded below only by 0 leaves the ratio unbounded."""
    if baseline.lower > 0:
        return ratio_interval(candidate, baseline)
    return Interval(
        value=candidate.value / baseline.value if baseline.value > 0 else math.inf,
        lower=candidate.lower / baseline.upper,
        upper=math.inf,
        samples=min(candidate.samples, baseline.samples),
    )


def _edges(interval: Interval) -> str:
    return f"({interval.lower * 1000:g}, {interval.upper * 1000:g}] ms"


def _counted(candidate: StepHistogram, baseline: StepHistogram) -> str:
    """'4210 / 3980 observations in 301 / 295 steps': both numbers the sample rests on."""
    seen = f"{candidate.total:.0f} / {baseline.total:.0f} observations"
    if candidate.steps is None and baseline.steps is None:
        return f"{seen}, steps unknown"
    steps = " / ".join("?" if h.steps is None else f"{h.steps:.0f}" for h in (candidate, baseline))
    return f"{seen} in {steps} steps"


def unknown_steps(histograms: ServerStepHistograms) -> str | None:
    """Why the look cannot count engine steps, naming the series and the sides; None when
    both sides have their step count.

    Why refuse rather than count observations: every request of a batch records the same
    step, so without the step count the sample is overstated by the batch size and the
    bound is too narrow by its square root; the missing series is what on-call must fix.
    """
    sides = [
        name
        for name, h in (("candidate", histograms.candidate), ("baseline", histograms.baseline))
        if h.steps is None
    ]
    if not sides:
        return None
    return (
        f"{ENGINE_STEPS_SERIES} has no series for the {' and '.join(sides)} engine over the "
        "window (relabelled away, not exported or not scraped): engine steps unknown, so the "
        "observations that share a step cannot be counted once; not judged on the raw count "
        f"({_counted(histograms.candidate, histograms.baseline)})"
    )


def measure_server_step_tail(
    gate: GateParams, histograms: ServerStepHistograms | MetricError | None, error: float
) -> Measurement:
    """Candidate / baseline q-quantile of vLLM's step ITL, bounded by bucket edges.

    Same contract as `gates.tail_latency.measure_client_tail`: pass when the ratio's upper bound
    is at most 1 + tolerance, fail when its lower bound exceeds it. An unbounded side (rank
    in the first or the +Inf bucket) can only stop a pass, never cause one. Samples, and
    the per-side minimum (minSamples), count effective samples (`effective_samples`): steps.
    A side without its engine-step count judges nothing (`unknown_steps`).
    """
    q = gate.number("quantile")
    threshold = 1.0 + gate.number("tolerance")
    if isinstance(histograms, MetricError):
        return metric_error(histograms)
    if histograms is None:
        return Measurement(GateVerdict.INCONCLUSIVE, "no step histogram yet", threshold=threshold)
    label = f"server step P{q * 100:g} ITL"
    if (unknown := unknown_steps(histograms)) is not None:
        return Measurement(GateVerdict.INCONCLUSIVE, f"{label}: {unknown}", threshold=threshold)
    base = quantile_bucket_interval(histograms.baseline, q, error / 2)
    cand = quantile_bucket_interval(histograms.candidate, q, error / 2)
    n_base, n_cand = (effective_samples(h) for h in (histograms.baseline, histograms.candidate))
    counted = _counted(histograms.candidate, histograms.baseline)
    needed = max(min_samples_for_quantile(q, error / 2), gate.min_samples or 0)
    if base is None or cand is None or min(n_base, n_cand) < needed:
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            f"{label}: {n_cand} candidate / {n_base} baseline effective samples ({counted}); "
            f"{needed} per side needed for the order-statistic bound",
            threshold=threshold,
            samples=min(n_base, n_cand),
        )
    ratio = _ratio(cand, base)
    verdict = judge_at_most(ratio, threshold)
    compared = relation(verdict, higher_is_better=False)
    reason = (
        f"{label} ratio {ratio.value:.2f} [{ratio.lower:.2f}, {ratio.upper:.2f}] {compared} "
        f"{threshold:.2f} (candidate in {_edges(cand)}, baseline in {_edges(base)}; "
        f"{counted})"
    )
    found = judged(
        verdict, reason, ratio, threshold, baseline_value=base.value, candidate_value=cand.value
    )
    # Status is JSON, which has no infinity: an unbounded ratio is reported as no bound.
    return found if math.isfinite(ratio.upper) else dataclasses.replace(found, upper_bound=None)
