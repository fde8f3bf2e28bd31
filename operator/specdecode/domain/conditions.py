"""Conditions in the shape kstatus reads, computed from the phase (never accumulated).

Ready, Progressing, Degraded, Drifted, and kstatus's Reconciling/Stalled, so Flux, Argo CD
and `kubectl wait` read the rollout natively; `lastTransitionTime` changes only with the
condition's status, so nothing flaps. Per condition: docs/internals.md.
"""

from __future__ import annotations

from datetime import datetime

from specdecode.domain.rollout_state import ConditionRecord, RolloutState
from specdecode.vocabulary import ConditionStatus, DriftKind, Phase

READY, PROGRESSING, DEGRADED, RECONCILING, STALLED = (
    "Ready",
    "Progressing",
    "Degraded",
    "Reconciling",
    "Stalled",
)
PRODUCTION_NOT_READY = "ProductionNotReady"
DRIFTED = "Drifted"
DRIFT_REASONS = {DriftKind.ACCEPTANCE: "AcceptanceDrifted", DriftKind.LATENCY: "LatencyDrifted"}
IN_PROGRESS = frozenset(
    {Phase.PENDING, Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED, Phase.PROMOTING}
)
STOPPED = frozenset({Phase.ROLLED_BACK, Phase.FAILED, Phase.DEGRADED})


def _truth(value: bool) -> ConditionStatus:
    return ConditionStatus.TRUE if value else ConditionStatus.FALSE


def _phase_reason(status: RolloutState) -> str:
    if status.phase is Phase.PAUSED:
        return "WaitingForPromotion"
    return status.reason or status.phase.value


def compute_conditions(
    status: RolloutState, production_ready: bool, generation: int, now: datetime
) -> list[ConditionRecord]:
    """The five conditions for this status, keeping unchanged lastTransitionTimes."""
    phase = status.phase
    reason = _phase_reason(status)
    message = status.message
    ready = phase is Phase.PROMOTED and production_ready
    if ready:
        ready_reason, ready_message = "Promoted", message
    elif phase is Phase.PROMOTED:
        ready_reason, ready_message = PRODUCTION_NOT_READY, "production is not ready"
    else:
        ready_reason = reason if phase in STOPPED else phase.value
        ready_message = message
    wanted = [
        (READY, ready, ready_reason, ready_message),
        (PROGRESSING, phase in IN_PROGRESS, reason, message),
        (DEGRADED, phase in STOPPED, reason if phase in STOPPED else "AsExpected", message),
        (RECONCILING, phase in IN_PROGRESS, reason, message),
        (STALLED, phase in STOPPED, reason if phase in STOPPED else "AsExpected", message),
    ]
    if status.drift is not None:  # only while a drift stands: no write for the others
        drift = status.drift
        wanted.append((DRIFTED, True, DRIFT_REASONS[drift.kind], drift.message))
    previous = {condition.type: condition for condition in status.conditions}
    conditions = []
    for kind, value, why, text in wanted:
        truth = _truth(value)
        old = previous.get(kind)
        since = old.last_transition_time if old is not None and old.status is truth else now
        conditions.append(
            ConditionRecord(
                type=kind,
                status=truth,
                reason=why,
                message=text,
                last_transition_time=since,
                observed_generation=generation,
            )
        )
    return conditions


def production_unready_since(status: RolloutState, now: datetime) -> datetime:
    """Since when production has been not ready while Promoted (from the Ready condition).

    Ready's lastTransitionTime only moves when its status changes, so it dates the loss of
    readiness; never earlier than entering the current phase.
    """
    ready = next((c for c in status.conditions if c.type == READY), None)
    if ready is None or ready.status is ConditionStatus.TRUE:
        return now
    since = ready.last_transition_time
    if status.phase_since is not None and status.phase_since > since:
        since = status.phase_since
    return since
