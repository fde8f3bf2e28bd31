"""The guard's step while Promoted: production's acceptance and tail judged against the analysis.

Why in the domain: the reaction to a drift (a condition, an Event, maybe a rollback) is a
transition like any other, decided by `decide`, tested without a cluster and replayed
after a restart. Looks land on a grid from `phaseSince`, so no look timestamp lives in status.
When, against what, and each reaction: docs/internals.md.
"""

from __future__ import annotations

from datetime import datetime

from specdecode.api.gate_spec import GateSpec
from specdecode.api.guard import DriftStatus
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.speculative import fingerprint_of
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.decision import Event, EventType
from specdecode.domain.drift import (
    DriftCheck,
    GuardGrid,
    GuardLook,
    ProductionAcceptance,
    check_drift,
)
from specdecode.domain.gates import Headline, headline_type, is_headline
from specdecode.domain.guard_findings import (
    Finding,
    acceptance_finding,
    latency_check,
    latency_finding,
)
from specdecode.domain.latency_drift import ProductionLatency
from specdecode.domain.observations import MetricError
from specdecode.domain.transitions import Step, describe, enter, start_analysis
from specdecode.vocabulary import DriftAction, DriftKind, Phase

DRIFTED = "Drifted"  # the Event's and the rollback's reason
# The gate whose results are the alpha headline (Acceptance), with its defaults.
DEFAULT_GATE = GateSpec(name="acceptance", type=headline_type(Headline.ALPHA))


def guard_grid(spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus) -> GuardGrid | None:
    """The guard's look grid, or None when the guard has nothing to judge."""
    guard = spec.guard
    if not guard.enabled or status.phase is not Phase.PROMOTED or status.phase_since is None:
        return None
    if status.stable_speculative is None:  # plain decoding: no drafts to judge
        return None
    return GuardGrid(status.phase_since, guard.interval_seconds, guard.window_seconds)


def judged_against(spec: SpecDecodeRolloutSpec) -> tuple[float, float, float]:
    """(minAlpha, error, minDraftTokens) of the strictest enforced Acceptance gate."""
    gates = [
        gate
        for stage in spec.analysis.stages
        for gate in stage.gates
        if is_headline(gate.type, Headline.ALPHA) and not gate.dry_run
    ]
    gate = max(gates or [DEFAULT_GATE], key=lambda g: g.number("min_alpha"))
    return gate.number("min_alpha"), 1.0 - gate.confidence, gate.number("min_draft_tokens")


def guard_check(
    spec: SpecDecodeRolloutSpec,
    status: SpecDecodeRolloutStatus,
    observed: ProductionAcceptance | MetricError | None,
    now: datetime,
) -> tuple[GuardLook, DriftCheck, float] | None:
    """The look due now, its check and the threshold; None when nothing is to be judged
    (no look due, or the observation is missing, failed or of another look)."""
    grid = guard_grid(spec, status)
    look = grid.latest(now) if grid is not None else None
    if look is None or not isinstance(observed, ProductionAcceptance):
        return None
    if observed.look_at != look.at:
        return None
    threshold, error, min_tokens = judged_against(spec)
    return look, check_drift(observed.blocks, threshold, error, look.times, min_tokens), threshold


def guard(
    spec: SpecDecodeRolloutSpec,
    status: SpecDecodeRolloutStatus,
    observed: ProductionAcceptance | MetricError | None,
    now: datetime,
    latency: ProductionLatency | MetricError | None = None,
) -> Step:
    """The guard's reaction to the look due now (see the module docstring)."""
    if status.drift is not None and guard_grid(spec, status) is None:
        text = "the drift guard no longer judges production (disabled, or plain decoding)"
        return Step(status.model_copy(update={"drift": None}), (Event("DriftCleared", text),))
    grid = guard_grid(spec, status)
    look = grid.latest(now) if grid is not None else None
    if look is None:
        return Step(status)
    judged = guard_check(spec, status, observed, now)
    accepted = acceptance_finding(judged[1], judged[2], look, now) if judged else Finding()
    tail = latency_finding(latency_check(spec, status, latency, look), look, now)
    found = accepted.drift or tail.drift
    recorded = status.drift
    if recorded is not None and found is None:
        back = {DriftKind.ACCEPTANCE: accepted, DriftKind.LATENCY: tail}[recorded.kind]
        if back.recovered is None:
            return Step(status)
        event = Event("DriftRecovered", back.recovered)
        return Step(status.model_copy(update={"drift": None}), (event,))
    previous = status.previous_stable_speculative
    rollback = spec.guard.on_drift is DriftAction.ROLLBACK and fingerprint_of(
        previous
    ) != fingerprint_of(status.stable_speculative)
    reanalyze = spec.guard.on_drift is DriftAction.REANALYZE
    if found is None or (recorded is not None and not (rollback or reanalyze)):
        return Step(status)
    message = found.message
    if spec.guard.on_drift is DriftAction.ROLLBACK and not rollback:
        message += "; no rollback: the config before the promotion is the one running"
    if rollback:
        message += f"; production returns to {describe(previous)}"
    drift = found.model_copy(update={"message": message})
    if reanalyze:
        return _reanalyze(spec, status, drift, now)
    if not rollback:
        event = Event(DRIFTED, message, EventType.WARNING)
        return Step(status.model_copy(update={"drift": drift}), (event,))
    return enter(
        status,
        Phase.ROLLED_BACK,
        now,
        DRIFTED,
        message,
        warning=True,
        verdict=Phase.ROLLED_BACK.value,
        stable_speculative=previous,
        stable_fingerprint=fingerprint_of(previous),
        drift=drift,
    )


def _reanalyze(
    spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus, drift: DriftStatus, now: datetime
) -> Step:
    """onDrift Reanalyze: production falls back to plain decoding (the new stable config)
    and a clean analysis of the promoted config (the desired one, or the schedule offer
    that was promoted in its place) against it starts, with the rollout's own stages.
    Passing promotes it again; failing keeps production on plain decoding. The drift stays
    recorded (and alerted) until the config is promoted again. Once only: a config that
    drifts again after its re-analysis promoted it stays off (RolledBack, DriftedAgain)
    until the spec changes or `retry`, so a config that passes on shadow traffic but not
    on production's never cycles."""
    config = status.stable_speculative
    fingerprint = fingerprint_of(config)
    fallen = {
        "stable_speculative": None,
        "stable_fingerprint": fingerprint_of(None),
        "previous_stable_speculative": config,
    }
    if status.reanalysed == fingerprint:
        message = (
            f"{drift.message}; it drifted again after its re-analysis promoted it: production "
            "returns to plain decoding and stays there until the spec changes or retry"
        )
        return enter(
            status,
            Phase.ROLLED_BACK,
            now,
            "DriftedAgain",
            message,
            warning=True,
            verdict=Phase.ROLLED_BACK.value,
            drift=drift.model_copy(update={"message": message}),
            **fallen,
        )
    message = (
        f"{drift.message}; production falls back to plain decoding while "
        f"{describe(config)} is analysed again against it"
    )
    recorded = drift.model_copy(update={"message": message})
    base = status.model_copy(update={**fallen, "drift": recorded})
    offer = config if fingerprint != fingerprint_of(spec.speculative) else None
    restarted = start_analysis(spec, base, now, "Reanalysis", message, offer=offer)
    kept = restarted.status.model_copy(update={"drift": recorded, "reanalysed": fingerprint})
    warning = Event(DRIFTED, message, EventType.WARNING)
    return Step(kept, (warning, *restarted.events))
