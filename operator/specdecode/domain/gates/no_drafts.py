"""No drafts over enough completed requests is a finding: the config never speculates here.

Why a finding and not missing data: a candidate whose speculative-decoding counters are
scraped and stay at zero while it completes request after request is measured, and what
was measured is that its method proposes nothing on this traffic (n-gram on chat prompts at
temperature 0.7 made 0 drafts in 240 s while serving 252 requests on the real-vLLM lane).
Such a config cannot pay: every step is a plain step, so alpha is undefined and tokens per
step are exactly 1. Saying "no drafts yet" for the whole stage let the clock roll it back as
Inconclusive, never Failed; this makes it Failed, for every acceptance-type gate (Acceptance
and AcceptedLength, through their one precondition, `acceptance.judgeable_counts`).
AcceptedLength would reach the same verdict from the stream (1 token per step, below any
minAcceptedLength, which is > 1), but only after the counters let it judge.

Only a real zero counts. Still Inconclusive (or Error), as before:
- the counters' series absent or NaN (`AcceptanceCounts.drafts_scraped` False: no
  speculative config, relabelled away, not scraped yet) or their read failed (Error);
- plain decoding (nothing to draft), or the candidate's per-batch-size schedule turning
  speculation off at the stage's concurrency (k = 0 there: no drafts by design);
- load data the acceptance bound could not rest on either (`acceptance.unjudged_load`);
- fewer completed requests than the gate's request minimum (minSamples, the same minimum its
  bound needs: 30 by default).

Which completed-request count: with Prompts traffic, the load pods' (`AcceptedMoments.
requests`: the candidate's requests that streamed to the end, counted by the instrument that
sent them, in a window checked complete), the requests the bound clusters on. Not vLLM's
`request_success_total`: it also counts aborted requests (a client that gave up may have
been queued the whole time and had no step to draft in) and is extrapolated by `increase()`.
Under Mirror traffic there are no load pods, so the engine's own count is all there is; the
adapter reads only completed requests (`observations.COMPLETED_REASONS`: stop, length,
repetition), the count the Mirror bound already rests on. Either count includes requests
whose answer ended after its first token (no decode step to draft in); a prompt set made of
those would also read as "never speculates", which for that traffic is true.
"""

from __future__ import annotations

import dataclasses

from specdecode.domain.gate_measures import Measurement
from specdecode.domain.gates.registry import Look
from specdecode.domain.observations import DRAFT_TOKENS_SERIES, DRAFTS_SERIES, AcceptanceCounts
from specdecode.vocabulary import GateVerdict


def no_drafts(
    counts: AcceptanceCounts | None,
    look: Look,
    unjudged_load: Measurement | None,
    completed: int | None,
    needed: int,
    what: str,
    threshold: float,
) -> Measurement:
    """The look of an acceptance-type gate whose candidate made no drafts in the window.

    Failed when the zero is real and `completed` (the trustworthy count, see the module
    docstring) reaches `needed`; otherwise Inconclusive (Error for a failed load read),
    saying why the zero is not yet a finding. `what` names the undefined statistic.
    """
    undefined = f"no drafts yet: {what} undefined"
    why = _not_a_finding(counts, look)
    if why is not None:
        return Measurement(GateVerdict.INCONCLUSIVE, f"{undefined} ({why})", threshold=threshold)
    if unjudged_load is not None:
        if unjudged_load.verdict is GateVerdict.ERROR:
            return unjudged_load
        reason = f"{undefined}; {unjudged_load.reason}"
        return dataclasses.replace(unjudged_load, reason=reason, threshold=threshold)
    count = completed or 0
    if count < needed:
        return Measurement(
            GateVerdict.INCONCLUSIVE,
            f"no drafts over {count} completed requests: {what} undefined ({needed} completed "
            "requests without a draft needed to call it a finding)",
            threshold=threshold,
            samples=0,
            units=count,
        )
    return Measurement(
        GateVerdict.FAILED,
        f"no drafts over {count} completed requests: this config never speculates on this "
        f"traffic ({DRAFTS_SERIES} scraped, increase 0)",
        threshold=threshold,
        samples=0,
        units=count,
    )


def _not_a_finding(counts: AcceptanceCounts | None, look: Look) -> str | None:
    """Why zero drafts says nothing about the config in this look, or None when it does."""
    if counts is None:
        return "the candidate's counters were not read"
    if not counts.drafts_scraped:
        return (
            f"{DRAFTS_SERIES} or {DRAFT_TOKENS_SERIES} has no series for the candidate over "
            "the window (not exported, relabelled away or not scraped): unknown, not zero"
        )
    if counts.drafts != 0 or counts.draft_tokens != 0:
        return f"the counters disagree: {counts.drafts:g} drafts, {counts.draft_tokens:g} tokens"
    if look.method is None:
        return "plain decoding drafts nothing"
    if look.may_not_draft:
        return (
            "the candidate's num_speculative_tokens_per_batch_size may turn speculation "
            "off at this stage's load"
        )
    return None
