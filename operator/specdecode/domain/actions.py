"""The `specdecode.io/action` annotation: promote, abort, retry. Acted on once, then cleared.

An action that does not apply in the current phase is still consumed with a Warning, so a
stale annotation never fires later; the status write lands before the clear, so an action
met again after a restart is consumed silently. Per action: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from specdecode.domain.decision import Event, EventType
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.transitions import NO_STAGE_RUNNING, Step, describe, enter, roll_back
from specdecode.vocabulary import ACTION_ANNOTATION, ACTIONS, Phase

Reanalyse = Callable[[RolloutState, datetime, str, str], Step]
"""(status, now, reason, message) -> the desired config analysed anew unless it is the stable
one: `transitions.analyse_desired_unless_stable` on the spec, which the caller holds."""

PROMOTABLE = frozenset({Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED})
ABORTABLE = frozenset({Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED, Phase.PROMOTING})
RETRYABLE = frozenset({Phase.ROLLED_BACK, Phase.FAILED})


def _ignored(status: RolloutState, reason: str, message: str) -> Step:
    return Step(status, (Event(reason, message, EventType.WARNING),), clear_action=True)


def _echo_of_itself(wanted: str, status: RolloutState) -> bool:
    """The annotation of an action this status already carries out (see the docstring)."""
    return wanted == "promote" and status.phase is Phase.PROMOTING


def _promote(status: RolloutState, now: datetime) -> Step:
    config = describe(status.candidate_speculative)
    if status.phase is Phase.PAUSED:
        reason, message = "PromotionApproved", f"promote approved; production rolls to {config}"
    else:
        stage = status.current_stage or "shadows deploying"
        reason = "GatesOverridden"
        message = (
            f"manual promote overrides the gates (analysis not finished: {stage}); "
            f"production rolls to {config}"
        )
    return enter(
        status,
        Phase.PROMOTING,
        now,
        reason,
        message,
        warning=status.phase is not Phase.PAUSED,
        **NO_STAGE_RUNNING,
    )


def apply_action(
    status: RolloutState,
    action: str | None,
    now: datetime,
    desired: str,
    reanalyse: Reanalyse,
) -> Step:
    """Act on the annotation's value (None: nothing to do); `desired`: the desired config
    as messages name it (`transitions.describe`), which a retry analyses (`reanalyse`)."""
    if action is None:
        return Step(status)
    wanted = action.strip().lower()
    phase = status.phase
    if wanted not in ACTIONS:
        allowed = ", ".join(ACTIONS)
        message = f"{ACTION_ANNOTATION}={action!r} is not one of {allowed}; ignored"
        return _ignored(status, "UnknownAction", message)
    if _echo_of_itself(wanted, status):
        return Step(status, (), clear_action=True)
    if wanted == "promote" and phase in PROMOTABLE:
        step = _promote(status, now)
    elif wanted == "abort" and phase in ABORTABLE:
        stable = describe(status.stable_speculative)
        message = (
            f"aborted by {ACTION_ANNOTATION}=abort in {phase.value}; production stays on {stable}"
        )
        step = roll_back(status, now, "Aborted", message)
    elif wanted == "retry" and phase in RETRYABLE:
        message = f"retry requested: new analysis of {desired}"
        step = reanalyse(status, now, "AnalysisRetried", message)
    else:
        message = f"{ACTION_ANNOTATION}={wanted} does not apply in phase {phase.value}; ignored"
        return _ignored(status, "ActionIgnored", message)
    return Step(step.status, step.events, clear_action=True)
