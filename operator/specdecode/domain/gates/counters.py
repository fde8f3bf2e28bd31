"""What the two gates judged on the candidate's acceptance counters share (Acceptance,
AcceptedLength): the observations they read (`CountersGate`), when a look's counters or
load data cannot be judged (`judgeable_counts`: a failed read, no drafts, load data the
bound cannot rest on), and the bounds (cluster-robust over the load pods' per-request
moments; from the counters alone under Mirror traffic). One module, so neither gate can
come to miss what the other's bound uses. More: docs/internals.md.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from specdecode.domain.acceptance_bound import (
    REQUEST_LENGTH_SERIES,
    acceptance_interval,
    effective_trials,
)
from specdecode.domain.clustered import Estimate, ratio_of_sums, t_critical
from specdecode.domain.gate_measures import Measurement, incomplete_window, metric_error
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates.no_drafts import no_drafts
from specdecode.domain.gates.registry import GateMeasure, Look, Need
from specdecode.domain.observations import (
    AcceptanceCounts,
    AcceptedMoments,
    LatencySamples,
    MetricError,
    StageObservations,
)
from specdecode.domain.stats import Interval
from specdecode.vocabulary import GateVerdict

CROSS_CHECK_GAP = 0.05  # |streamed alpha - counters' alpha| worth a word in status


def accepted_per_step(moments: AcceptedMoments) -> Estimate | None:
    """Accepted tokens per decode step over requests, with its cluster-robust SE."""
    return ratio_of_sums(
        moments.requests,
        moments.steps,
        moments.accepted,
        moments.steps_sq,
        moments.accepted_steps,
        moments.accepted_sq,
    )


def streamed_moments(seen: StageObservations) -> AcceptedMoments | None:
    """The candidate's per-request acceptance sums, if the load pods streamed any."""
    latency = seen.candidate_latency
    if not isinstance(latency, LatencySamples):
        return None
    moments = latency.accepted
    return moments if moments.requests >= 2 and moments.steps > 0 else None


def unjudged_load(seen: StageObservations, look: Look, threshold: float) -> Measurement | None:
    """Why an acceptance-type gate cannot judge this look's load data, or None when it can.

    With Prompts traffic the bound rests on the load pods' per-request moments: a missing,
    failed or incomplete load report, or too few requests with streamed chunks, is
    Inconclusive (or Error), never a bound on an assumed correlation. Mirror traffic has
    no load pods: None, and the caller bounds from the counters (see the module docstring).
    """
    if look.mirror:
        return None
    latency = seen.candidate_latency
    if isinstance(latency, MetricError):
        return metric_error(latency)
    if latency is None:
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            "no load report yet: per-request acceptance unknown",
            threshold=threshold,
        )
    if (unjudged := incomplete_window(threshold, latency)) is not None:
        return unjudged
    if streamed_moments(seen) is None:
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            f"{latency.accepted.requests} finished requests with streamed chunks: "
            "per-request acceptance not measured yet",
            threshold=threshold,
        )
    return None


def judgeable_counts(
    seen: StageObservations, look: Look, threshold: float, what: str, needed: int
) -> AcceptanceCounts | Measurement:
    """The candidate's counters for an acceptance-type gate to judge, or the Measurement
    that says why this look cannot: a failed read (Error), no drafts (`no_drafts`: Failed
    over `needed` completed requests with the counters scraped, else Inconclusive with
    `what` undefined), or load data the bound cannot rest on (`unjudged_load`)."""
    counts = seen.candidate_acceptance
    if isinstance(counts, MetricError):
        return metric_error(counts)
    unjudged = unjudged_load(seen, look, threshold)
    if counts is None or counts.drafts <= 0 or counts.draft_tokens <= 0:
        completed = completed_requests(seen, look, counts)
        return no_drafts(counts, look, unjudged, completed, needed, what, threshold)
    return counts if unjudged is None else unjudged


def completed_requests(
    seen: StageObservations, look: Look, counts: AcceptanceCounts | None
) -> int | None:
    """The candidate's completed requests an acceptance-type gate may count (None: unknown).

    Prompts traffic: the load pods' requests with streamed chunks (what the bound clusters
    on); Mirror: the engine's own count of completed requests (see `no_drafts` for why).
    """
    if look.mirror:
        return None if counts is None else round(counts.requests)
    moments = streamed_moments(seen)
    return None if moments is None else moments.requests


def counters_basis(counts: AcceptanceCounts) -> tuple[int, str]:
    """Mirror traffic's units (the server's finished requests) and how its reason says so."""
    requests = round(counts.requests)
    trials = effective_trials(counts.drafts, counts.longest_request_tokens)
    return requests, (
        f"{requests} requests (server count), no streamed chunks under Mirror: bounded as "
        f"{trials or 0:.0f} all-or-nothing requests of the longest's length "
        f"(<= {counts.longest_request_tokens or 0:.0f} tokens)"
    )


def unbounded_on_counters(counts: AcceptanceCounts, what: str, threshold: float) -> Measurement:
    """Mirror traffic without the request-length histogram: no bound without assuming how
    drafts of one request correlate, so Inconclusive, naming the missing series."""
    return Measurement(
        GateVerdict.INCONCLUSIVE,
        f"{what} from the counters over {round(counts.requests)} requests, not bounded: no "
        f"{REQUEST_LENGTH_SERIES} histogram of the window's finished requests (or one beyond "
        "its last bucket), which bounds drafts per request under Mirror",
        threshold=threshold,
    )


def clustered_interval(
    point: float, per_step: Estimate, scale: float, error: float, offset: float = 0.0
) -> Interval:
    """offset + scale * point with bounds from the requests' SE of the per-step ratio."""
    z = NormalDist().inv_cdf(1.0 - error) if error > 0 else math.inf
    margin = t_critical(z, per_step.clusters - 1) * per_step.se * scale
    return Interval(
        value=offset + scale * point,
        lower=offset + scale * point - margin,
        upper=offset + scale * point + margin,
        samples=per_step.samples,
    )


def counters_interval(counts: AcceptanceCounts, error: float) -> Interval | None:
    """alpha bounded on the counters alone (`acceptance_interval`): what both counter gates
    fall back to when the load pods streamed no per-request moments."""
    return acceptance_interval(
        counts.drafts,
        counts.draft_tokens,
        counts.accepted_tokens,
        counts.longest_request_tokens,
        error,
    )


class CountersGate(GateMeasure):
    """What the gates judged on the candidate's acceptance counters read (Acceptance,
    AcceptedLength): one set, so neither can come to miss what the other's bound uses."""

    higher_is_better = True  # a floor: the draft must be accepted at least this much

    def needs(self, gate: GateParams) -> frozenset[Need]:
        """The candidate's counters, and the load pods' per-request moments for the bound."""
        return frozenset({Need.ACCEPTANCE_COUNTERS, Need.PER_REQUEST_MOMENTS})
