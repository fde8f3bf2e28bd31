"""Measurements of the latency gates: tail-latency quantile ratio and speedup.

Both compare a quantile of the candidate with the same quantile of the baseline, measured
on the same shadow requests. Each quantile gets a distribution-free order-statistic bound
at half the look's error; the ratio bounds combine them (Bonferroni), so each ratio bound
holds with probability 1 - error whatever the latency distribution, heavy tails included.
No rank test: Mann-Whitney (Kayenta) lets a worse tail pass when the bulk is unchanged.
"""

from __future__ import annotations

from specdecode.api.gate_spec import GateSpec, ItlDefinition, SpeedupMetric
from specdecode.api.status import GateVerdict
from specdecode.domain.gate_measures import (
    Measurement,
    judge_at_least,
    judge_at_most,
    judged,
    metric_error,
    relation,
)
from specdecode.domain.observations import LatencySamples, MetricError
from specdecode.domain.sketch import Sketch
from specdecode.domain.stats import (
    Interval,
    min_samples_for_quantile,
    ratio_interval,
    sketch_quantile_interval,
)

DEFAULT_QUANTILE = 0.99
DEFAULT_TOLERANCE = 0.10
DEFAULT_MIN_SPEEDUP = 1.0


# A look whose instrument delayed its own timestamps by more than this share of the
# quantile being judged measures the client, not the engines: Inconclusive, never a verdict.
MAX_CLIENT_DELAY_SHARE = 0.05


def _paired_quantiles(
    baseline: Sketch, candidate: Sketch, q: float, error: float
) -> tuple[Interval, Interval] | int:
    """Both sides' quantile intervals, each at half the error (Bonferroni); else the n needed."""
    needed = min_samples_for_quantile(q, error / 2)
    base = sketch_quantile_interval(baseline, q, error / 2)
    cand = sketch_quantile_interval(candidate, q, error / 2)
    if base is None or cand is None or base.lower <= 0 or cand.lower <= 0:
        return needed
    return base, cand


def measure_tail_latency(
    gate: GateSpec,
    baseline: LatencySamples | MetricError | None,
    candidate: LatencySamples | MetricError | None,
    error: float,
) -> Measurement:
    """Candidate / baseline q-quantile ITL, bounded by order statistics on both sides.

    upper = cand_upper / base_lower and lower = cand_lower / base_upper; each quantile bound
    spends half the look's error, so each ratio bound holds with 1 - error.
    """
    q = gate.quantile or DEFAULT_QUANTILE
    threshold = 1.0 + (gate.tolerance if gate.tolerance is not None else DEFAULT_TOLERANCE)
    if isinstance(baseline, MetricError):
        return metric_error(baseline)
    if isinstance(candidate, MetricError):
        return metric_error(candidate)
    if baseline is None or candidate is None:
        return Measurement(GateVerdict.INCONCLUSIVE, "no latency samples yet", threshold=threshold)
    if (why := baseline.incomplete or candidate.incomplete) is not None:
        return Measurement(GateVerdict.INCONCLUSIVE, why, threshold=threshold)
    per_chunk = gate.itl_definition is ItlDefinition.PER_CHUNK
    base = baseline.per_chunk_itl if per_chunk else baseline.per_token_itl
    cand = candidate.per_chunk_itl if per_chunk else candidate.per_token_itl
    label = f"P{q * 100:g} ITL"
    paired = _paired_quantiles(base, cand, q, error)
    needed = max(paired if isinstance(paired, int) else 0, gate.min_samples or 0)
    if isinstance(paired, int) or min(base.total, cand.total) < needed:
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            f"{label}: {base.total} baseline / {cand.total} candidate samples; "
            f"{needed} per side needed for the order-statistic bound",
            threshold=threshold,
            samples=min(base.total, cand.total),
        )
    base_q, cand_q = paired
    saturated = _saturation(baseline, candidate, q, min(base_q.value, cand_q.value))
    if saturated is not None:
        return Measurement(
            GateVerdict.INCONCLUSIVE, saturated, threshold=threshold, samples=base_q.samples
        )
    ratio = ratio_interval(cand_q, base_q)
    verdict = judge_at_most(ratio, threshold)
    compared = relation(verdict, higher_is_better=False)
    reason = (
        f"{label} ratio {ratio.value:.3f} [{ratio.lower:.3f}, {ratio.upper:.3f}] {compared} "
        f"{threshold:.2f} (candidate {cand_q.value * 1000:.2f} ms, baseline "
        f"{base_q.value * 1000:.2f} ms, {ratio.samples} samples per side)"
    )
    return judged(
        verdict, reason, ratio, threshold, baseline_value=base_q.value, candidate_value=cand_q.value
    )


def measure_speedup(
    gate: GateSpec,
    baseline: LatencySamples | MetricError | None,
    candidate: LatencySamples | MetricError | None,
    error: float,
) -> Measurement:
    """Baseline / candidate median time per output token, with order-statistic bounds.

    Throughput compares per-request token rates (1 / TPOT); the median commutes with 1/x,
    so both metrics share one bound and differ only in what is reported.
    """
    threshold = gate.min_speedup if gate.min_speedup is not None else DEFAULT_MIN_SPEEDUP
    if isinstance(baseline, MetricError):
        return metric_error(baseline)
    if isinstance(candidate, MetricError):
        return metric_error(candidate)
    if baseline is None or candidate is None:
        return Measurement(GateVerdict.INCONCLUSIVE, "no requests yet", threshold=threshold)
    if (why := baseline.incomplete or candidate.incomplete) is not None:
        return Measurement(GateVerdict.INCONCLUSIVE, why, threshold=threshold)
    base, cand = baseline.time_per_output_token, candidate.time_per_output_token
    paired = _paired_quantiles(base, cand, 0.5, error)
    needed = max(paired if isinstance(paired, int) else 0, gate.min_samples or 0)
    if isinstance(paired, int) or min(base.total, cand.total) < needed:
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            f"speedup: {min(base.total, cand.total)} requests per side; {needed} needed",
            threshold=threshold,
            samples=min(base.total, cand.total),
        )
    base_q, cand_q = paired
    speedup = ratio_interval(base_q, cand_q)
    verdict = judge_at_least(speedup, threshold)
    metric = gate.speedup_metric or SpeedupMetric.TIME_PER_OUTPUT_TOKEN
    reason = (
        f"{metric.value} speedup {speedup.value:.3f} [{speedup.lower:.3f}, {speedup.upper:.3f}]"
        f" vs {threshold:.2f} over {speedup.samples} requests per side"
    )
    return judged(
        verdict,
        reason,
        speedup,
        threshold,
        baseline_value=base_q.value,
        candidate_value=cand_q.value,
    )


def _saturation(
    baseline: LatencySamples, candidate: LatencySamples, q: float, judged_quantile: float
) -> str | None:
    """Why the look cannot be trusted because the load client lagged, or None.

    Each load shard measures how late its own event loop runs (the delay a chunk's
    timestamp can carry); if its q-quantile exceeds MAX_CLIENT_DELAY_SHARE of the latency
    quantile being judged, the look measured the client, not the engines.
    """
    for side, samples in (("baseline", baseline), ("candidate", candidate)):
        delay = samples.client_delay
        if delay.total == 0:
            continue
        quantile = delay.quantile(q)
        if quantile > MAX_CLIENT_DELAY_SHARE * judged_quantile:
            return (
                f"shadow load saturated: the {side} load client's P{q * 100:g} timestamp "
                f"delay is {quantile * 1000:.2f} ms, over {MAX_CLIENT_DELAY_SHARE:.0%} of "
                f"the {judged_quantile * 1000:.2f} ms being judged; add load pods "
                "(spec.analysis.loadGenerator) or lower the stage's concurrency"
            )
    return None
