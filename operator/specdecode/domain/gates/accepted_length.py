"""The AcceptedLength gate: mean tokens per decode step, for variable-length proposals.

ngram and suffix decoding propose as many tokens as their match supports, so alpha falls as
proposals grow even when each step yields more; what pays is tokens per step (the drafting
costs next to nothing). Judged from the streamed chunks, bounded cluster-robustly over
requests; vLLM's counters count only drafting steps, so they are reported, not judged. No
drafts is Failed (`no_drafts`); under Mirror traffic the counters' alpha bound is used.
More: docs/internals.md.
"""

from __future__ import annotations

import dataclasses

from specdecode.domain.gate_measures import Measurement, judge_at_least, judged
from specdecode.domain.gate_measures import relation as compared
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import counters
from specdecode.domain.gates.registry import Look, TuningFigure, register
from specdecode.domain.observations import StageObservations
from specdecode.domain.stats import Interval
from specdecode.vocabulary import GateType, GateVerdict


@register(GateType.ACCEPTED_LENGTH)
class AcceptedLengthGate(counters.CountersGate):
    """Tokens per step judged on its lower bound against minAcceptedLength."""

    statistic = "tokens per step, 1 + accepted / drafts, for ngram and suffix"
    judged_against = ("min_accepted_length",)
    tuning_figure = TuningFigure.ACCEPTED_LENGTH

    def measure(self, gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
        """1 + accepted / drafts from the counters, bounded over requests."""
        threshold = gate.number("min_accepted_length")
        needed = gate.effective_min_samples
        counts = counters.judgeable_counts(seen, look, threshold, "tokens per step", needed)
        if isinstance(counts, Measurement):
            return counts
        length = 1.0 + counts.accepted_tokens / counts.drafts
        moments = counters.streamed_moments(seen)
        per_step = counters.accepted_per_step(moments) if moments is not None else None
        stream: float | None = None
        if per_step is not None and moments is not None:
            # Judged on the stream: vLLM counts a draft only on steps that proposed
            # something, so 1 + accepted / drafts overstates what every step yields when
            # lookups often find nothing (suffix on code: 4.3 per drafting step, 1.7 per step).
            interval = counters.clustered_interval(
                per_step.value, per_step, 1.0, look.error, offset=1.0
            )
            stream, units = 1.0 + per_step.value, moments.requests
            basis = f"{moments.requests} requests"
        else:
            alpha = counters.counters_interval(counts, look.error)
            if alpha is None:
                return counters.unbounded_on_counters(counts, "tokens per step", threshold)
            proposed = counts.draft_tokens / counts.drafts
            interval = Interval(
                value=length,
                lower=1.0 + alpha.lower * proposed,
                upper=1.0 + alpha.upper * proposed,
                samples=round(counts.drafts),
            )
            units, basis = counters.counters_basis(counts)
        interval = dataclasses.replace(interval, lower=max(1.0, interval.lower))
        numbers = f"{interval.value:.2f} [{interval.lower:.2f}, {interval.upper:.2f}] tokens/step"
        verdict = judge_at_least(interval, threshold)
        if units < needed:
            verdict = GateVerdict.INCONCLUSIVE
            reason = f"{numbers} over {basis} ({needed} needed)"
        else:
            relation = compared(verdict, higher_is_better=True)
            reason = f"{numbers} {relation} {threshold} over {basis}"
        if stream is not None and abs(stream - length) > counters.CROSS_CHECK_GAP * 2:
            reason += f"; counters say {length:.2f} tokens per drafting step"
        found = judged(
            verdict,
            reason,
            interval,
            threshold,
            candidate_value=length,
            units=units,
            enough_data=units >= needed,
        )
        return dataclasses.replace(
            found,
            mean_acceptance_length=length,
            acceptance_per_position=tuple(n / counts.drafts for n in counts.per_position_accepted),
            stream_value=stream,
        )
