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

from specdecode.domain.gate_measures import Measurement, judge_at_least, judged
from specdecode.domain.gate_measures import relation as compared
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import counters
from specdecode.domain.gates.registry import Headline, Look, TuningFigure, register
from specdecode.domain.observations import AcceptanceCounts, StageObservations
from specdecode.domain.stats import Interval
from specdecode.vocabulary import GateType, GateVerdict


@register(GateType.ACCEPTANCE)
class AcceptanceGate(counters.CountersGate):
    """alpha judged on its lower bound against minAlpha."""

    statistic = "alpha = accepted / draft tokens, for fixed-k model drafts"
    judged_against = ("min_alpha",)
    headline = Headline.ALPHA
    tuning_figure = TuningFigure.ALPHA

    def measure(self, gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
        """alpha from the counters, bounded over requests (see the module docstring)."""
        threshold = gate.number("min_alpha")
        counts = counters.judgeable_counts(
            seen, look, threshold, "alpha", gate.effective_min_samples
        )
        if isinstance(counts, Measurement):
            return counts
        k = counts.draft_tokens / counts.drafts
        alpha = min(1.0, max(0.0, counts.accepted_tokens / counts.draft_tokens))
        moments = counters.streamed_moments(seen)
        per_step = counters.accepted_per_step(moments) if moments is not None else None
        if per_step is not None and moments is not None:
            interval = counters.clustered_interval(alpha * k, per_step, 1.0 / k, look.error)
            interval = dataclasses.replace(
                interval,
                lower=max(0.0, interval.lower),
                upper=min(1.0, interval.upper),
                samples=int(counts.draft_tokens),
            )
            stream_alpha: float | None = per_step.value / k
            units, basis = moments.requests, f"{moments.requests} requests"
        else:
            found = counters.counters_interval(counts, look.error)
            if found is None:
                return counters.unbounded_on_counters(counts, "alpha", threshold)
            interval, stream_alpha = found, None
            units, basis = counters.counters_basis(counts)
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
        if (
            stream_alpha is not None
            and abs(stream_alpha - interval.value) > counters.CROSS_CHECK_GAP
        ):
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
