"""No drafts over enough completed requests is a finding: the config never speculates here.

Why a finding, not missing data: counters scraped at zero while the candidate completes
request after request measure that its method proposes nothing on this traffic, so it
cannot pay; "no drafts yet" let the clock roll it back as Inconclusive, never Failed. Only
a real zero counts: absent series, plain decoding, k = 0 by schedule, unusable load data or
fewer than minSamples completed requests stay Inconclusive. More: docs/internals.md.
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
