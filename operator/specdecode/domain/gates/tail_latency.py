"""The TailLatency gate: candidate / baseline q-quantile of the inter-token latency.

Unit of inference: the `blockSeconds` time block (whole engine steps), since samples of one
step are not independent. Each side's quantile is bounded over blocks by Woodruff's
cluster-robust error with Newey-West covariance (`clustered.block_quantile`), the ratio by
MOVER (`log_ratio_interval`). A hung request's open gap counts (`domain.open_requests`);
ServerStep is judged in `step_histogram`. More: docs/internals.md.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from specdecode.domain.bursts import bursty_delivery
from specdecode.domain.clustered import BlockQuantile, block_quantile, t_critical
from specdecode.domain.gate_measures import (
    SATURATED,
    SATURATION_SIDES,
    Measurement,
    UnsentLimit,
    judge_at_most,
    judge_client_timed,
    judged,
    relation,
)
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates.registry import (
    GateMeasure,
    Headline,
    Look,
    Need,
    TuningFigure,
    register,
)
from specdecode.domain.observations import (
    LatencySamples,
    MetricError,
    ServerStepHistograms,
    StageObservations,
)
from specdecode.domain.open_requests import stall_bound, with_open_stalls
from specdecode.domain.sketch import Sketch
from specdecode.domain.stats import Interval
from specdecode.domain.step_histogram import histogram_quantile, measure_server_step_tail
from specdecode.vocabulary import GateType, GateVerdict, ItlDefinition

# Blocks holding tail samples a verdict needs: the tail share's spread is estimated from
# them, and with fewer the normal approximation fails (10 gave 10 % wrong promotions at
# the threshold with 32 requests per step; 30 gave 4-6 %, see the unit tests).
MIN_TAIL_BLOCKS = 30
# A look whose instrument delayed its own timestamps by more than this share of the
# quantile being judged measures the client, not the engines: Inconclusive, never a verdict.
MAX_CLIENT_DELAY_SHARE = 0.05


def side_blocks(samples: LatencySamples, definition: ItlDefinition) -> tuple[list[Sketch], Sketch]:
    """One side's per-block sketches of the chosen ITL and their (cached) union."""
    if definition is ItlDefinition.PER_TOKEN:
        return [b.per_token_itl for b in samples.blocks], samples.per_token_itl
    return [b.per_chunk_itl for b in samples.blocks], samples.per_chunk_itl


def log_ratio_interval(
    candidate: BlockQuantile,
    baseline: BlockQuantile,
    error: float,
    min_tail_blocks: int,
    every_block_informs: bool = False,
) -> Interval | None:
    """candidate / baseline with MOVER bounds at `error`; None when too few tail blocks.

    MOVER (the method of variance estimates recovery): each side's own asymmetric bounds
    give the distance from its estimate, and the two distances add in quadrature, so the
    ratio bound is as wide as the sides' errors combined, not their sum (Bonferroni).
    `every_block_informs`: for a central quantile (the median) every block has weight on
    both sides of it, so the degrees of freedom are the blocks, not the tail blocks (with
    tied values no weight need lie strictly above a median).
    """
    if every_block_informs:
        tails = min(candidate.clusters, baseline.clusters)
    else:
        tails = min(candidate.tail_clusters, baseline.tail_clusters)
    if tails < min_tail_blocks:
        return None
    z = NormalDist().inv_cdf(1.0 - error) if error > 0 else math.inf
    z = t_critical(z, tails - 1)
    if math.isinf(z):
        return Interval(
            value=math.exp(candidate.log_value - baseline.log_value),
            lower=0.0,
            upper=math.inf,
            samples=min(candidate.samples, baseline.samples),
        )
    c, b = candidate.log_value, baseline.log_value
    c_low, c_high = candidate.log_bounds(z)
    b_low, b_high = baseline.log_bounds(z)
    down = math.hypot(c - c_low, b_high - b)
    up = math.hypot(c_high - c, b - b_low)
    return Interval(
        value=math.exp(c - b),
        lower=math.exp(c - b - down) if math.isfinite(down) else 0.0,
        upper=math.exp(c - b + up) if math.isfinite(up) else math.inf,
        samples=min(candidate.samples, baseline.samples),
    )


@register(GateType.TAIL_LATENCY)
class TailLatencyGate(GateMeasure):
    """Pass when the ratio's upper bound <= 1 + tolerance; fail when its lower bound exceeds."""

    higher_is_better = False  # a ceiling on candidate / baseline tail latency
    statistic = "candidate / baseline quantile of the gap between streamed chunks"
    judged_against = ("quantile", "tolerance")
    headline = Headline.TAIL
    compares_client_timings = True
    load_phrase = "the tail"
    tuning_figure = TuningFigure.TAIL

    def needs(self, gate: GateParams) -> frozenset[Need]:
        """ServerStep: both step histograms; else the client's blocks, and the histograms
        for the cross-check reported beside them (`server_cross_check`)."""
        if gate.choice("itl_definition", ItlDefinition) is ItlDefinition.SERVER_STEP:
            return frozenset({Need.SERVER_STEP_HISTOGRAMS})
        return frozenset({Need.CLIENT_LATENCY, Need.SERVER_STEP_HISTOGRAMS})

    def measure(self, gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
        """Dispatch ServerStep to the histogram gate; else the block-robust client ratio."""
        if gate.choice("itl_definition", ItlDefinition) is ItlDefinition.SERVER_STEP:
            return measure_server_step_tail(gate, seen.server_step_itl, look.error)
        return measure_client_tail(gate, seen.baseline_latency, seen.candidate_latency, look)

    def server_cross_check(
        self, gate: GateParams, seen: StageObservations
    ) -> tuple[float | None, float | None]:
        """vLLM's step-ITL quantiles (interpolated, as Prometheus does) at the gate's q.

        Reported next to every TailLatency gate's numbers: the client's exact timings and the
        server's histogram should tell the same story; a ServerStep gate is judged on the
        latter.
        """
        server = seen.server_step_itl
        if not isinstance(server, ServerStepHistograms):
            return None, None
        q = gate.number("quantile")
        return histogram_quantile(server.baseline, q), histogram_quantile(server.candidate, q)


def measure_client_tail(
    gate: GateParams,
    baseline: LatencySamples | MetricError | None,
    candidate: LatencySamples | MetricError | None,
    look: Look,
) -> Measurement:
    """Candidate / baseline q-quantile of the load pods' ITL over time blocks, unless a
    side was offered less than an open-loop stage's rate (`unequal_load`)."""
    return judge_client_timed(
        1.0 + gate.number("tolerance"),
        baseline,
        candidate,
        "no latency samples yet",
        lambda base, cand: _client_tail(gate, base, cand, look),
        look.unsent,
    )


def _client_tail(
    gate: GateParams, baseline: LatencySamples, candidate: LatencySamples, look: Look
) -> Measurement:
    """The tail ratio's bounds and verdict, both sides' samples in hand."""
    q = gate.number("quantile")
    threshold = 1.0 + gate.number("tolerance")
    definition = gate.choice("itl_definition", ItlDefinition)
    label = f"P{q * 100:g} {definition.value} ITL"
    open_note = ""
    if (bound := stall_bound(baseline, definition, q, gate.number("tolerance"))) is not None:
        baseline, base_open = with_open_stalls(baseline, bound)
        candidate, cand_open = with_open_stalls(candidate, bound)
        if base_open or cand_open:
            open_note = (
                f"; with {cand_open} / {base_open} requests in flight stalled over "
                f"{bound * 1000:.0f} ms counted at their age"
            )
    base_blocks, base_all = side_blocks(baseline, definition)
    cand_blocks, cand_all = side_blocks(candidate, definition)
    base = block_quantile(base_blocks, base_all, q)
    cand = block_quantile(cand_blocks, cand_all, q)
    needed = gate.effective_min_samples
    counted = (
        f"{len(cand_blocks)} / {len(base_blocks)} blocks, {cand_all.total} / {base_all.total} "
        f"samples (candidate / baseline){open_note}"
    )
    ratio = None
    if base is not None and cand is not None and min(base.clusters, cand.clusters) >= needed:
        ratio = log_ratio_interval(cand, base, look.error, MIN_TAIL_BLOCKS)
    if base is None or cand is None or ratio is None:
        tails = "?" if base is None or cand is None else min(base.tail_clusters, cand.tail_clusters)
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            f"{label}: {counted}, {tails} blocks with tail samples; {needed} blocks per side "
            f"and {MIN_TAIL_BLOCKS} with tail samples needed",
            threshold=threshold,
            samples=min(base_all.total, cand_all.total),
        )
    base_q, cand_q = math.exp(base.log_value), math.exp(cand.log_value)
    saturated = saturation(baseline, candidate, q, min(base_q, cand_q), look.unsent)
    saturated = saturated or bursty_delivery(baseline, candidate, look.unsent)
    if saturated is not None:
        return Measurement(
            GateVerdict.INCONCLUSIVE, saturated, threshold=threshold, samples=ratio.samples
        )
    verdict = judge_at_most(ratio, threshold)
    reason = (
        f"{label} ratio {ratio.value:.3f} [{ratio.lower:.3f}, {ratio.upper:.3f}] "
        f"{relation(verdict, higher_is_better=False)} {threshold:.2f} (candidate "
        f"{cand_q * 1000:.2f} ms, baseline {base_q * 1000:.2f} ms; {counted})"
    )
    units = min(base.clusters, cand.clusters)
    return judged(
        verdict,
        reason,
        ratio,
        threshold,
        baseline_value=base_q,
        candidate_value=cand_q,
        units=units,
    )


def saturation(
    baseline: LatencySamples,
    candidate: LatencySamples,
    q: float,
    judged_quantile: float,
    unsent: UnsentLimit,
) -> str | None:
    """Why the look cannot be trusted because the load client lagged, or None.

    Each load shard measures how late its own event loop runs (the delay a chunk's
    timestamp can carry); if its q-quantile exceeds MAX_CLIENT_DELAY_SHARE of the latency
    quantile being judged, the look measured the client, not the engines.
    """
    for side, samples in zip(SATURATION_SIDES, (baseline, candidate), strict=True):
        delay = samples.client_delay
        if delay.total == 0:
            continue
        quantile = delay.quantile(q)
        if quantile > MAX_CLIENT_DELAY_SHARE * judged_quantile:
            return (
                f"{SATURATED}: the {side} load client's P{q * 100:g} timestamp "
                f"delay is {quantile * 1000:.2f} ms, over {MAX_CLIENT_DELAY_SHARE:.0%} of "
                f"the {judged_quantile * 1000:.2f} ms being judged; {unsent.delay_remedy()}"
            )
    return None


def saturated_side(reason: str) -> str | None:
    """The side a look's reason names as saturated (see `saturation`), or None.

    Why from the reason: it is what status keeps of the look, and the gauge behind
    SpecDecodeLoadSaturated is set from status, never from a second bookkeeping.
    """
    head = f"{SATURATED}: the "
    if not reason.startswith(head):
        return None
    side = reason[len(head) :].split(" ", 1)[0]
    return side if side in SATURATION_SIDES else None
