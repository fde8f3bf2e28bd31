"""The AcceptedLength gate: mean tokens per decode step, for variable-length proposals.

ngram and suffix decoding propose as many tokens as their match supports (suffix up to 24),
so alpha = accepted / proposed falls as proposals grow even when each step yields more:
suffix decoding on code measured alpha 0.517 with up to 24 proposed tokens, while it is the
fastest method for code on an 8B model (1.45x). What pays is tokens per step,
1 + accepted / drafts: the drafting itself costs next to nothing (a CPU lookup).

Judged: tokens per step from the streamed chunks (1 + sum a / sum n over requests, see
`acceptance`), bounded cluster-robustly over requests with Student's t at requests - 1
degrees of freedom. vLLM's counters (1 + accepted / drafts) count only steps that proposed a
draft, so they are reported beside it (`meanAcceptanceLength`), not judged. No drafts at all
over minSamples completed requests, with the counters scraped at zero, is Failed as for
Acceptance (`no_drafts`: exactly 1 token per step, below any minAcceptedLength). Missing or
incomplete load data is Inconclusive (`acceptance.unjudged_load`); only under Mirror traffic
(no load pods): the counters' alpha bound (no assumed correlation, `acceptance_bound`;
Inconclusive without the request-length histogram) times proposed tokens per draft, with
minSamples finished requests by the server's count.
"""

from __future__ import annotations

import dataclasses

from specdecode.domain.gate_measures import Measurement, judge_at_least, judged
from specdecode.domain.gate_measures import relation as compared
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates.acceptance import (
    CROSS_CHECK_GAP,
    CountersGate,
    accepted_per_step,
    clustered_interval,
    counters_basis,
    counters_interval,
    judgeable_counts,
    streamed_moments,
    unbounded_on_counters,
)
from specdecode.domain.gates.registry import Look, register
from specdecode.domain.observations import StageObservations
from specdecode.domain.stats import Interval
from specdecode.vocabulary import GateType, GateVerdict


@register(GateType.ACCEPTED_LENGTH)
class AcceptedLengthGate(CountersGate):
    """Tokens per step judged on its lower bound against minAcceptedLength."""

    statistic = "tokens per step, 1 + accepted / drafts, for ngram and suffix"
    judged_against = ("min_accepted_length",)

    def measure(self, gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
        """1 + accepted / drafts from the counters, bounded over requests."""
        threshold = gate.min_accepted_length
        needed = gate.effective_min_samples
        counts = judgeable_counts(seen, look, threshold, "tokens per step", needed)
        if isinstance(counts, Measurement):
            return counts
        length = 1.0 + counts.accepted_tokens / counts.drafts
        moments = streamed_moments(seen)
        per_step = accepted_per_step(moments) if moments is not None else None
        stream: float | None = None
        if per_step is not None and moments is not None:
            # Judged on the stream: vLLM counts a draft only on steps that proposed
            # something, so 1 + accepted / drafts overstates what every step yields when
            # lookups often find nothing (suffix on code: 4.3 per drafting step, 1.7 per step).
            interval = clustered_interval(per_step.value, per_step, 1.0, look.error, offset=1.0)
            stream, units = 1.0 + per_step.value, moments.requests
            basis = f"{moments.requests} requests"
        else:
            alpha = counters_interval(counts, look.error)
            if alpha is None:
                return unbounded_on_counters(counts, "tokens per step", threshold)
            proposed = counts.draft_tokens / counts.drafts
            interval = Interval(
                value=length,
                lower=1.0 + alpha.lower * proposed,
                upper=1.0 + alpha.upper * proposed,
                samples=round(counts.drafts),
            )
            units, basis = counters_basis(counts)
        interval = dataclasses.replace(interval, lower=max(1.0, interval.lower))
        numbers = f"{interval.value:.2f} [{interval.lower:.2f}, {interval.upper:.2f}] tokens/step"
        verdict = judge_at_least(interval, threshold)
        if units < needed:
            verdict = GateVerdict.INCONCLUSIVE
            reason = f"{numbers} over {basis} ({needed} needed)"
        else:
            relation = compared(verdict, higher_is_better=True)
            reason = f"{numbers} {relation} {threshold} over {basis}"
        if stream is not None and abs(stream - length) > CROSS_CHECK_GAP * 2:
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
