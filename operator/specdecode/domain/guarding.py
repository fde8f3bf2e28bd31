"""The guard's step while Promoted: production's acceptance and tail judged against the analysis.

Why in the domain: the reaction to a drift (a condition, an Event, maybe a rollback) is a
transition like any other, decided by `decide`, tested without a cluster and replayed
after a restart. Looks land on a grid from `phaseSince`, so no look timestamp lives in status.
It reads the spec and status as `guard_model` views and returns a `GuardReaction` (the
phase step writes it). When, against what, and each reaction: docs/internals.md.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from specdecode.domain.decision import Event, EventType
from specdecode.domain.drift import (
    DriftCheck,
    GuardGrid,
    GuardLook,
    ProductionAcceptance,
    check_drift,
)
from specdecode.domain.gates import Headline, is_headline
from specdecode.domain.guard_findings import (
    Finding,
    acceptance_finding,
    latency_check,
    latency_finding,
)
from specdecode.domain.guard_model import (
    Drift,
    GuardPlan,
    GuardReaction,
    GuardState,
    Reaction,
)
from specdecode.domain.latency_drift import ProductionLatency
from specdecode.domain.observations import MetricError
from specdecode.vocabulary import DriftAction, DriftKind, Phase

DRIFTED = "Drifted"  # the Event's and the rollback's reason


def guard_grid(
    state: GuardState, enabled: bool, interval_seconds: float, window_seconds: float
) -> GuardGrid | None:
    """The guard's look grid (on or off, a look every `interval_seconds`, in windows of
    `window_seconds`), or None when the guard has nothing to judge."""
    if not enabled or state.phase is not Phase.PROMOTED or state.phase_since is None:
        return None
    if state.plain:  # plain decoding: no drafts to judge
        return None
    return GuardGrid(state.phase_since, interval_seconds, window_seconds)


def planned_grid(plan: GuardPlan, state: GuardState) -> GuardGrid | None:
    """The look grid of the guard's `plan` (`guard_grid`)."""
    return guard_grid(state, plan.enabled, plan.interval_seconds, plan.window_seconds)


def judged_against(plan: GuardPlan) -> tuple[float, float, float]:
    """(minAlpha, error, minDraftTokens) of the strictest enforced Acceptance gate."""
    gates = [
        gate
        for _, stage in plan.stages
        for gate in stage
        if is_headline(gate.type, Headline.ALPHA) and not gate.dry_run
    ]
    gate = max(gates or [plan.default_acceptance], key=lambda g: g.number("min_alpha"))
    return gate.number("min_alpha"), 1.0 - gate.confidence, gate.number("min_draft_tokens")


def guard_check(
    plan: GuardPlan,
    state: GuardState,
    observed: ProductionAcceptance | MetricError | None,
    now: datetime,
) -> tuple[GuardLook, DriftCheck, float] | None:
    """The look due now, its check and the threshold; None when nothing is to be judged
    (no look due, or the observation is missing, failed or of another look)."""
    grid = planned_grid(plan, state)
    look = grid.latest(now) if grid is not None else None
    if look is None or not isinstance(observed, ProductionAcceptance):
        return None
    if observed.look_at != look.at:
        return None
    threshold, error, min_tokens = judged_against(plan)
    return look, check_drift(observed.blocks, threshold, error, look.times, min_tokens), threshold


def guard(
    plan: GuardPlan,
    state: GuardState,
    observed: ProductionAcceptance | MetricError | None,
    now: datetime,
    latency: ProductionLatency | MetricError | None = None,
) -> GuardReaction:
    """The guard's reaction to the look due now (see the module docstring)."""
    if state.recorded is not None and planned_grid(plan, state) is None:
        text = "the drift guard no longer judges production (disabled, or plain decoding)"
        return GuardReaction(Reaction.FORGET, events=(Event("DriftCleared", text),))
    grid = planned_grid(plan, state)
    look = grid.latest(now) if grid is not None else None
    if look is None:
        return GuardReaction()
    judged = guard_check(plan, state, observed, now)
    accepted = acceptance_finding(judged[1], judged[2], look, now) if judged else Finding()
    tail = latency_finding(latency_check(plan, state, latency, look), look, now)
    found = accepted.drift or tail.drift
    recorded = state.recorded
    if recorded is not None and found is None:
        back = {DriftKind.ACCEPTANCE: accepted, DriftKind.LATENCY: tail}[recorded]
        if back.recovered is None:
            return GuardReaction()
        return GuardReaction(Reaction.FORGET, events=(Event("DriftRecovered", back.recovered),))
    rollback = plan.on_drift is DriftAction.ROLLBACK and state.previous != state.stable
    reanalyze = plan.on_drift is DriftAction.REANALYZE
    if found is None or (recorded is not None and not (rollback or reanalyze)):
        return GuardReaction()
    message = found.message
    if plan.on_drift is DriftAction.ROLLBACK and not rollback:
        message += "; no rollback: the config before the promotion is the one running"
    if rollback:
        message += f"; production returns to {state.previous_named}"
    drift = replace(found, message=message)
    if reanalyze:
        return _reanalyze(plan, state, drift)
    warning = Event(DRIFTED, message, EventType.WARNING)
    if not rollback:
        return GuardReaction(Reaction.RECORD, drift, message, (warning,))
    return GuardReaction(Reaction.ROLL_BACK, drift, message, (warning,))


def _reanalyze(plan: GuardPlan, state: GuardState, drift: Drift) -> GuardReaction:
    """onDrift Reanalyze: production falls back to plain decoding (the new stable config)
    and a clean analysis of the promoted config (the desired one, or the schedule offer
    that was promoted in its place) against it starts, with the rollout's own stages.
    Passing promotes it again; failing keeps production on plain decoding. The drift stays
    recorded (and alerted) until the config is promoted again. Once only: a config that
    drifts again after its re-analysis promoted it stays off (RolledBack, DriftedAgain)
    until the spec changes or `retry`, so a config that passes on shadow traffic but not
    on production's never cycles."""
    if state.reanalysed == state.stable:
        message = (
            f"{drift.message}; it drifted again after its re-analysis promoted it: production "
            "returns to plain decoding and stays there until the spec changes or retry"
        )
        again = Event("DriftedAgain", message, EventType.WARNING)
        return GuardReaction(Reaction.FALL_BACK, replace(drift, message=message), message, (again,))
    message = (
        f"{drift.message}; production falls back to plain decoding while "
        f"{state.stable_named} is analysed again against it"
    )
    warning = Event(DRIFTED, message, EventType.WARNING)
    recorded = replace(drift, message=message)
    offer = state.stable != plan.desired
    return GuardReaction(Reaction.REANALYZE, recorded, message, (warning,), offer)
