"""What an apply found in its way (`status.applyFindings`), as the decision shows it.

The apply stores its findings in status (`reconciler.apply`); a decision keeps them (they
belong to apply, not to the state machine) and turns them into Degraded=True: an object
named like a child, the load-token Secret or the promotion ConfigMap that the rollout does
not own (`ChildNotOwned`), or the Patch promotion's apply refused by the source's owner
(`PatchConflict`). Read from status, so a restarted operator shows the same condition.
"""

from __future__ import annotations

from datetime import datetime

from specdecode.domain.decision import Decision
from specdecode.domain.degraded import with_degraded
from specdecode.domain.rollout_state import RolloutState
from specdecode.vocabulary import Phase

NOT_OWNED = "ChildNotOwned"
CONFLICT = "PatchConflict"


def carry_findings(old: RolloutState, decision: Decision) -> Decision:
    """`decision` with the stored findings: they belong to apply, not to the state machine
    (a transition that builds its status afresh would drop them, and they would be
    written back by the next apply: two writes for nothing)."""
    if decision.status.apply_findings == old.apply_findings:
        return decision
    return decision.with_status(
        decision.status.model_copy(update={"apply_findings": old.apply_findings})
    )


def with_foreign_children(old: RolloutState, decision: Decision, now: datetime) -> Decision:
    """`decision`, Degraded=True while an object named like a child is not the rollout's."""
    findings = old.apply_findings
    messages = findings.not_owned() if findings is not None else ()
    if not messages:
        return decision
    status = with_degraded(old, decision.status, NOT_OWNED, "; ".join(messages), now)
    return decision.with_status(status)


def not_owned_found(status: RolloutState) -> bool:
    """Whether status names an object in the rollout's way (no watch says when it goes)."""
    return status.apply_findings is not None and bool(status.apply_findings.not_owned())


def with_patch_conflict(old: RolloutState, decision: Decision, now: datetime) -> Decision:
    """`decision`, Degraded=True while the promotion's apply conflicts with the owner
    (`decision` carries the stored findings: `carry_findings`)."""
    findings = decision.status.apply_findings
    if findings is None or findings.patch_refused is None:
        return decision
    conflict = findings.patch_refused
    if decision.status.phase is not Phase.PROMOTING:  # the refusal is over: forgotten with
        cleared = findings.model_copy(  # the transition's own write (no write of its own)
            update={"patch_refused": None, "patch_refused_generation": None}
        )
        update = {"apply_findings": None if cleared.is_empty() else cleared}
        return decision.with_status(decision.status.model_copy(update=update))
    message = (
        f"the promotion's server-side apply was refused, not forced: {conflict}; the "
        "owner applies status.workload.ownerPatch (kubectl specdecode patch <rollout>)"
    )
    status = with_degraded(old, decision.status, CONFLICT, message, now)
    return decision.with_status(status)
