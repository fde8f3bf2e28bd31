"""Mirror's request outcomes: what vLLM's counter can certify, and when it cannot.

Under Mirror traffic the gateway discards the shadows' responses, so the only outcomes are
each engine's `vllm:request_success_total{finished_reason}`. No series, an engine restart in
the window, or a candidate whose arrivals fall short of the baseline's beyond the mirror's
sampling noise is Inconclusive, never "no errors". What the counter leaves unaccounted never
helps a pass (`unaccounted_requests`: counted as failed for a pass, not for a failure).
More: docs/internals.md.
"""

from __future__ import annotations

import math

from specdecode.domain.gate_measures import Measurement, metric_error
from specdecode.domain.observations import (
    REQUEST_OUTCOMES_SERIES,
    EngineOutcomePair,
    EngineOutcomes,
    MetricError,
    StageObservations,
)
from specdecode.vocabulary import GateVerdict

# How far (in sampling standard deviations) the candidate's arrivals may fall short of the
# baseline's before requests lost ahead of its engine are presumed (one-sided 1e-4), and
# the window edges' slack (requests, and a share of the arrivals).
MISSING_Z = 3.72
EDGE_SLACK = 3.0
EDGE_SHARE = 0.02


def _inconclusive(reason: str, threshold: float) -> Measurement:
    return Measurement(GateVerdict.INCONCLUSIVE, reason, threshold=threshold)


def _unknown(name: str, side: EngineOutcomes, threshold: float) -> Measurement | None:
    """Why one engine's counts certify nothing this look, or None when they may."""
    if not side.scraped:
        return _inconclusive(
            f"no {REQUEST_OUTCOMES_SERIES} series of the {name} engine: its request "
            "outcomes are unknown (mirrored responses never reach the operator)",
            threshold,
        )
    if name == "candidate" and not side.in_flight_known:
        return _inconclusive(
            "the candidate engine's requests in flight (vllm:num_requests_running and "
            "waiting at both window ends) were not read: a request hung in it is counted by "
            "no finished_reason, so its outcomes are unknown",
            threshold,
        )
    if side.restarts > 0:
        return _inconclusive(
            f"the {name} engine restarted in the window ({REQUEST_OUTCOMES_SERIES} reset): "
            "requests in flight then and mirrored while it was down are counted by no "
            "finished_reason",
            threshold,
        )
    return None


def missing_ahead_of_engine(pair: EngineOutcomePair) -> str | None:
    """Why the candidate's engine seems to have missed mirrored requests, or None."""
    baseline, candidate = pair.baseline.arrivals, pair.candidate.arrivals
    chance = max(0.0, 1.0 - pair.mirror_share)
    sampling = MISSING_Z * math.sqrt(max(0.0, baseline + candidate) * chance)
    allowed = sampling + EDGE_SLACK + EDGE_SHARE * max(0.0, baseline)
    if baseline - candidate <= allowed:
        return None
    return (
        f"the candidate's engine saw {candidate:.0f} mirrored requests, the baseline's "
        f"{baseline:.0f} (more than mirror sampling explains): requests that failed before "
        f"its engine (HTTP errors, an unreachable pod) are in no {REQUEST_OUTCOMES_SERIES}"
    )


def mirror_counts(
    seen: StageObservations, threshold: float
) -> tuple[tuple[int, int], tuple[int, int]] | Measurement:
    """(failed, total) of the candidate and the baseline, or the Measurement saying why
    the engines' counters cannot be judged this look (see the module docstring)."""
    pair = seen.engine_outcomes
    if isinstance(pair, MetricError):
        return metric_error(pair)
    if pair is None:
        return _inconclusive(f"no {REQUEST_OUTCOMES_SERIES} read yet", threshold)
    for name, side in (("candidate", pair.candidate), ("baseline", pair.baseline)):
        if (unknown := _unknown(name, side, threshold)) is not None:
            return unknown
    if (missing := missing_ahead_of_engine(pair)) is not None:
        return _inconclusive(missing, threshold)
    candidate, baseline = pair.candidate, pair.baseline
    return (candidate.failed, candidate.total), (baseline.failed, baseline.total)


def unaccounted_requests(pair: EngineOutcomePair) -> int:
    """Candidate requests the counters do not account for: its arrivals short of the
    baseline's, plus its requests in flight at the window's end beyond the baseline's."""
    short = pair.baseline.arrivals - pair.candidate.arrivals
    held = pair.candidate.in_flight - pair.baseline.in_flight
    return max(0, round(short)) + max(0, round(held))
