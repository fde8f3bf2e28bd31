"""The Speedup gate: baseline / candidate median time per output token (TPOT).

TPOT is one figure per finished request, but requests that ran together shared every step,
so the unit is the time block a request ended in: each side's median is bounded over blocks
(Woodruff, Newey-West, as in `clustered`) and the ratio by MOVER (see `tail_latency`).
Throughput (1 / TPOT) shares the bound: the median commutes with 1/x. Under Mirror traffic
no response reaches the load pods: reported, not judged. More: docs/internals.md.
"""

from __future__ import annotations

import math

from specdecode.domain.bursts import bursty_delivery
from specdecode.domain.clustered import block_quantile
from specdecode.domain.gate_measures import (
    Measurement,
    judge_at_least,
    judge_client_timed,
    judged,
)
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates.registry import GateMeasure, Look, Need, TuningFigure, register
from specdecode.domain.gates.tail_latency import log_ratio_interval, saturation
from specdecode.domain.observations import LatencySamples, StageObservations
from specdecode.domain.stats import Interval
from specdecode.vocabulary import GateType, GateVerdict, SpeedupMetric

MEDIAN = 0.5
MIN_BLOCKS_EITHER_SIDE = 2  # the median sits in most blocks: no separate tail minimum


@register(GateType.SPEEDUP)
class SpeedupGate(GateMeasure):
    """Pass when the speedup's lower bound >= minSpeedup; fail when its upper bound is below."""

    higher_is_better = True  # a floor on baseline / candidate time per token
    statistic = "baseline / candidate median time per output token"
    judged_against = ("min_speedup",)
    compares_client_timings = True
    load_phrase = "the speedup"
    tuning_figure = TuningFigure.SPEEDUP

    def needs(self, gate: GateParams) -> frozenset[Need]:
        """Both sides' client latency blocks (TPOT per request)."""
        return frozenset({Need.CLIENT_LATENCY})

    def measure(self, gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
        """Median TPOT ratio over time blocks of both sides, unless a side's chunks came in
        bursts or its client's stamps lagged (`bursty_delivery`, `saturation`: a TPOT is
        then the client's, either way), or it was offered less than the stage's rate
        (`unequal_load`)."""
        return judge_client_timed(
            gate.number("min_speedup"),
            seen.baseline_latency,
            seen.candidate_latency,
            "no requests yet",
            lambda base, cand: _tpot_speedup(gate, base, cand, look),
            look.unsent,
        )


def _tpot_speedup(
    gate: GateParams, baseline: LatencySamples, candidate: LatencySamples, look: Look
) -> Measurement:
    """The speedup's bounds and verdict from both sides' per-block median TPOT."""
    threshold = gate.number("min_speedup")
    base = block_quantile(
        [b.time_per_output_token for b in baseline.blocks],
        baseline.time_per_output_token,
        MEDIAN,
    )
    cand = block_quantile(
        [b.time_per_output_token for b in candidate.blocks],
        candidate.time_per_output_token,
        MEDIAN,
    )
    needed = gate.effective_min_samples
    slower = None
    if base is not None and cand is not None and min(base.clusters, cand.clusters) >= needed:
        slower = log_ratio_interval(
            cand, base, look.error, MIN_BLOCKS_EITHER_SIDE, every_block_informs=True
        )
    requests = min(baseline.time_per_output_token.total, candidate.time_per_output_token.total)
    if base is None or cand is None or slower is None:
        blocks = 0 if base is None or cand is None else min(base.clusters, cand.clusters)
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            f"speedup: {requests} requests in {blocks} blocks per side; {needed} blocks needed",
            threshold=threshold,
            samples=requests,
        )
    base_tpot, cand_tpot = math.exp(base.log_value), math.exp(cand.log_value)
    span = min(base_tpot * _gaps_per_request(baseline), cand_tpot * _gaps_per_request(candidate))
    refused = bursty_delivery(baseline, candidate, look.unsent) or saturation(
        baseline, candidate, MEDIAN, span, look.unsent
    )
    if refused is not None:
        return Measurement(GateVerdict.INCONCLUSIVE, refused, threshold=threshold, samples=requests)
    speedup = Interval(
        value=1.0 / slower.value,
        lower=1.0 / slower.upper if slower.upper > 0 else 0.0,
        upper=1.0 / slower.lower if slower.lower > 0 else math.inf,
        samples=requests,
    )
    verdict = judge_at_least(speedup, threshold)
    metric = gate.choice("speedup_metric", SpeedupMetric)
    reason = (
        f"{metric.value} speedup {speedup.value:.3f} [{speedup.lower:.3f}, "
        f"{speedup.upper:.3f}] vs {threshold:.2f} over {requests} requests per side in "
        f"{min(base.clusters, cand.clusters)} blocks"
    )
    return judged(
        verdict,
        reason,
        speedup,
        threshold,
        baseline_value=base_tpot,
        candidate_value=cand_tpot,
        units=min(base.clusters, cand.clusters),
    )


def _gaps_per_request(side: LatencySamples) -> float:
    """A side's mean token gaps per request (tokens - 1): a TPOT times it is the request's
    first-to-last span, which a timestamp delay shifts (so `saturation` judges against it).
    """
    requests = side.requests_ok + side.requests_failed
    return max(side.output_tokens / requests - 1.0, 1.0) if requests else 1.0
