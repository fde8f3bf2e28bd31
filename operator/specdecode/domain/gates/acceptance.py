"""The Acceptance gate: alpha = accepted / draft tokens, for fixed-k model drafts.

With the same small k every step (EAGLE, MTP, a draft model) tokens per step are
1 + alpha k, so alpha is the proxy. Point estimate: the candidate's counters; bound:
cluster-robust over requests, from the load pods' streamed chunks (the correlation of drafts
within a prompt measured, not assumed). Zero drafts is Failed (`no_drafts`); missing load
data is Inconclusive (`unjudged_load`); only Mirror traffic bounds alpha from the counters
alone (`acceptance_bound`). More: docs/internals.md.
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

from specdecode.domain.acceptance_bound import (
    REQUEST_LENGTH_SERIES,
    acceptance_interval,
    effective_trials,
)
from specdecode.domain.clustered import Estimate, ratio_of_sums, t_critical
from specdecode.domain.gate_measures import (
    Measurement,
    incomplete_window,
    judge_at_least,
    judged,
    metric_error,
)
from specdecode.domain.gate_measures import relation as compared
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates.no_drafts import no_drafts
from specdecode.domain.gates.registry import (
    GateMeasure,
    Headline,
    Look,
    Need,
    TuningFigure,
    register,
)
from specdecode.domain.observations import (
    AcceptanceCounts,
    AcceptedMoments,
    LatencySamples,
    MetricError,
    StageObservations,
)
from specdecode.domain.stats import Interval
from specdecode.vocabulary import GateType, GateVerdict

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


@register(GateType.ACCEPTANCE)
class AcceptanceGate(CountersGate):
    """alpha judged on its lower bound against minAlpha."""

    statistic = "alpha = accepted / draft tokens, for fixed-k model drafts"
    judged_against = ("min_alpha",)
    headline = Headline.ALPHA
    tuning_figure = TuningFigure.ALPHA

    def measure(self, gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
        """alpha from the counters, bounded over requests (see the module docstring)."""
        threshold = gate.number("min_alpha")
        counts = judgeable_counts(seen, look, threshold, "alpha", gate.effective_min_samples)
        if isinstance(counts, Measurement):
            return counts
        k = counts.draft_tokens / counts.drafts
        alpha = min(1.0, max(0.0, counts.accepted_tokens / counts.draft_tokens))
        moments = streamed_moments(seen)
        per_step = accepted_per_step(moments) if moments is not None else None
        if per_step is not None and moments is not None:
            interval = clustered_interval(alpha * k, per_step, 1.0 / k, look.error)
            interval = dataclasses.replace(
                interval,
                lower=max(0.0, interval.lower),
                upper=min(1.0, interval.upper),
                samples=int(counts.draft_tokens),
            )
            stream_alpha: float | None = per_step.value / k
            units, basis = moments.requests, f"{moments.requests} requests"
        else:
            found = counters_interval(counts, look.error)
            if found is None:
                return unbounded_on_counters(counts, "alpha", threshold)
            interval, stream_alpha = found, None
            units, basis = counters_basis(counts)
        return self._judged(gate, counts, interval, threshold, stream_alpha, units, basis)

    def _judged(
        self,
        gate: GateParams,
        counts: AcceptanceCounts,
        interval: Interval,
        threshold: float,
        stream_alpha: float | None,
        units: int,
        basis: str,
    ) -> Measurement:
        needed_tokens = gate.count("min_draft_tokens")
        needed_requests = gate.effective_min_samples
        numbers = f"alpha {interval.value:.3f} [{interval.lower:.3f}, {interval.upper:.3f}]"
        verdict = judge_at_least(interval, threshold)
        if interval.samples < needed_tokens or units < needed_requests:
            verdict = GateVerdict.INCONCLUSIVE
            reason = (
                f"{numbers} over {interval.samples} draft tokens, {basis} (needs "
                f"{needed_tokens} draft tokens and {needed_requests} requests)"
            )
        else:
            reason = (
                f"{numbers} {compared(verdict, higher_is_better=True)} {threshold} over "
                f"{interval.samples} draft tokens, {basis}"
            )
        if stream_alpha is not None and abs(stream_alpha - interval.value) > CROSS_CHECK_GAP:
            reason += (
                f"; streamed chunks say alpha {stream_alpha:.3f}, counters {interval.value:.3f}"
                " (disagree: merged chunks from a lagging client, or a proxy batching them?)"
            )
        found = judged(
            verdict,
            reason,
            interval,
            threshold,
            candidate_value=interval.value,
            units=units,
            enough_data=interval.samples >= needed_tokens and units >= needed_requests,
        )
        return dataclasses.replace(
            found,
            mean_acceptance_length=1.0 + counts.accepted_tokens / counts.drafts,
            acceptance_per_position=tuple(n / counts.drafts for n in counts.per_position_accepted),
            stream_value=stream_alpha,
        )
