"""Degraded=True for a reason the phase does not know: a condition laid over the phase's.

Some problems are found outside the state machine (an engine running another vLLM release,
an object named like a child that the operator does not own). They do not change the
phase (the gates still measure what runs; people decide what to fix), but the rollout
must say so where kstatus and `kubectl wait` look: its Degraded condition.
"""

from __future__ import annotations

from datetime import datetime

from specdecode.domain.conditions import DEGRADED
from specdecode.domain.rollout_state import ConditionRecord, RolloutState
from specdecode.vocabulary import ConditionStatus


def with_degraded(
    old: RolloutState,
    new: RolloutState,
    reason: str,
    message: str,
    now: datetime,
) -> RolloutState:
    """`new` with Degraded=True for `reason`, unless Degraded is already True for another
    reason (the phase's, or an earlier check's: the first one stays).

    The transition time is kept from `old` while the same reason lasts, so the condition
    does not flap on every reconcile.
    """
    conditions = list(new.conditions)
    index = next((i for i, c in enumerate(conditions) if c.type == DEGRADED), None)
    if (
        index is not None
        and conditions[index].status is ConditionStatus.TRUE
        and conditions[index].reason != reason
    ):
        return new
    before = next((c for c in old.conditions if c.type == DEGRADED), None)
    kept = before is not None and before.reason == reason
    degraded = ConditionRecord(
        type=DEGRADED,
        status=ConditionStatus.TRUE,
        reason=reason,
        message=message,
        last_transition_time=before.last_transition_time if kept and before else now,
        observed_generation=conditions[index].observed_generation if index is not None else None,
    )
    if index is None:
        conditions.append(degraded)
    else:
        conditions[index] = degraded
    return new.model_copy(update={"conditions": conditions})


def degraded_true(status: RolloutState) -> bool:
    """Whether Degraded is True in `status`, for any reason."""
    return any(c.type == DEGRADED and c.status is ConditionStatus.TRUE for c in status.conditions)


def degraded_said(status: RolloutState, reason: str) -> str | None:
    """The message of Degraded=True for `reason` in `status` (None: not so)."""
    said = next((c for c in status.conditions if c.type == DEGRADED), None)
    if said is None or said.status is not ConditionStatus.TRUE or said.reason != reason:
        return None
    return said.message
