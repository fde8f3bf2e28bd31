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
  candidate's API server, a pod unreachable): both engines are sent copies of the same
  live requests, so their arrivals (finished, plus in flight at the window's end, minus in
  flight at its start) agree up to the mirror's sampling: each RequestMirror filter copies
  a request with chance p = mirrorPercent / 100 on its own draw, so for N live requests
  Var(A_b - A_c) = 2 N p (1 - p), estimated as (A_b + A_c)(1 - p), plus the window edges'
  slack (`increase()` extrapolates each side alone: EDGE_SLACK requests and EDGE_SHARE of
  the arrivals). A candidate short of the baseline by more than MISSING_Z standard
  deviations plus that slack lost requests no counter names. At p = 1 (mirrorPercent 100)
  a loss of a few percent shows within a stage; at p = 0.5 only over thousands of
  requests, so a short window can miss it (README, Mirror).

What the counter leaves unaccounted never helps a pass (`unaccounted_requests`): the
candidate's arrivals short of the baseline's (within the slack above: lost ahead of its
engine, or sampling) and its requests in flight beyond the baseline's at the window's end
(a hung request stays "running" in vLLM and is counted by no reason). A pass must hold with
every one of them counted as failed; a failure is judged on the counted outcomes alone.
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
