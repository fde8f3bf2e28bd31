"""Mirror's request outcomes: what vLLM's counter can certify, and when it cannot.

Under Mirror traffic the gateway discards the shadows' responses, so the only outcomes
are each engine's own count, `vllm:request_success_total{finished_reason}` (stop, length,
repetition: served; error, abort: failed, see `observations.FAILED_REASONS`). The unit is a
mirrored request, as a load pod's request is under Prompts; both engines get copies of the
same live requests, so ErrorRate's difference applies unchanged.

What the counter cannot see, and what makes the look Inconclusive instead of "no errors":
- no series (not exported, relabelled away, not scraped yet): nothing is known;
- an engine restart in the window (the counter reset): requests in flight when it died
  and those mirrored while it was down are counted by no reason;
- requests that never reached the engine (an HTTP error before it: a refusal of the
  candidate's API server, a pod unreachable): both engines are sent the same traffic, so
  their arrivals (finished + still running or waiting at the window's end) should agree up
  to the mirror's sampling noise (each RequestMirror filter samples mirrorPercent on its
  own: Var(A_b - A_c) = 2 N p (1 - p) <= A_b + A_c); a candidate short of the baseline by
  more than MISSING_Z of those standard deviations lost requests no counter names.
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
# baseline's before requests lost ahead of its engine are presumed (one-sided 1e-4).
MISSING_Z = 3.72


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
    baseline = pair.baseline.total + pair.baseline.in_flight
    candidate = pair.candidate.total + pair.candidate.in_flight
    noise = math.sqrt(max(1.0, baseline + candidate))
    if baseline - candidate <= MISSING_Z * noise:
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
