"""One reconcile of each phase, given the observations (actions are handled before this).

Each phase's step and exits (Deploying, Analyzing, Paused, Promoting, Promoted,
RolledBack, Failed); production is untouched throughout. Per phase: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from specdecode.domain.adoption import awaiting_owner, patched
from specdecode.domain.analysis_plan import AnalysisPlan
from specdecode.domain.analyzing import analyze, begin_stage
from specdecode.domain.conditions import production_unready_since
from specdecode.domain.guard_model import Reaction
from specdecode.domain.guarding import guard
from specdecode.domain.observations import ChildRole, ChildState, Observations
from specdecode.domain.rollout_settings import RolloutSettings
from specdecode.domain.rollout_state import DriftRecord, RolloutState
from specdecode.domain.transitions import (
    NO_STAGE_RUNNING,
    Step,
    analyse_desired_unless_stable,
    describe,
    enter,
    guard_state,
    promoted,
    roll_back,
    start_analysis,
)
from specdecode.speculative_document import fingerprint_of
from specdecode.vocabulary import Phase, PromotionStrategy

# One phase's reconcile step on the observations; None: the Deployments it waits for are
# not ready yet (`_waiting` applies the progress deadline).
PhaseStep = Callable[[RolloutSettings, RolloutState, Observations, datetime], Step | None]


def ready_on_config(child: ChildState, fingerprint: str | None) -> bool:
    """The child is ready and was rendered with this config."""
    return child.ready and child.config_fingerprint == fingerprint


def _on_evidence(plan: AnalysisPlan, child: ChildState) -> bool:
    """An Owned shadow was rendered with the engine the spec describes now: after an
    image edit the cached Deployment still reads ready on the old one. (Unlabelled: an
    older operator rendered it, before any edit this analysis could miss.)"""
    if plan.evidence.source is not None or child.evidence is None:
        return True
    return child.evidence == plan.evidence.engine_digest


def _why_not_ready(role: ChildRole, child: ChildState) -> str:
    if not child.exists:
        return f"{role.value}: not created"
    if child.unschedulable_reason:
        return f"{role.value}: unschedulable: {child.unschedulable_reason}"
    if child.crash_reason:
        return f"{role.value}: crashed: {child.crash_reason}"
    return f"{role.value}: {child.ready_replicas}/{child.desired_replicas} ready"


def shadow_failure(status: RolloutState, observations: Observations, now: datetime) -> Step | None:
    """A crashed shadow ends the analysis (the candidate's crash is its own verdict)."""
    candidate = observations.child(ChildRole.CANDIDATE)
    if candidate.crash_reason:
        config = describe(status.candidate_speculative)
        message = f"candidate {config} crashed: {candidate.crash_reason}"
        return roll_back(status, now, "CandidateCrashed", message)
    baseline = observations.child(ChildRole.BASELINE)
    if baseline.crash_reason:
        message = f"baseline crashed, cannot compare: {baseline.crash_reason}"
        return roll_back(status, now, "BaselineFailed", message)
    return None


def _traffic_failed(status: RolloutState, error: str, now: datetime) -> Step:
    message = f"shadow traffic cannot run: {error}; production untouched"
    return enter(
        status,
        Phase.FAILED,
        now,
        "TrafficSourceInvalid",
        message,
        warning=True,
        **NO_STAGE_RUNNING,
    )


def _deploying(
    settings: RolloutSettings,
    status: RolloutState,
    observations: Observations,
    now: datetime,
) -> Step | None:
    """Analyzing once both shadows are ready on their configs; None while they are not."""
    baseline = observations.child(ChildRole.BASELINE)
    candidate = observations.child(ChildRole.CANDIDATE)
    stable_fp = fingerprint_of(status.stable_speculative)
    plan = observations.analysis_plan()
    current = _on_evidence(plan, baseline) and _on_evidence(plan, candidate)
    if (
        current
        and ready_on_config(baseline, stable_fp)
        and ready_on_config(candidate, status.candidate_fingerprint)
    ):
        started = begin_stage(settings, status, 0, now)
        first = settings.stages[0].name
        message = f"baseline and candidate ready; stage {first} started"
        return enter(started, Phase.ANALYZING, now, "ShadowsReady", message)
    if observations.source is not None and observations.source.problem is not None:
        return Step(status)  # waits for the source (Degraded WorkloadUnavailable says why)
    return None


def _promoting(
    settings: RolloutSettings,
    status: RolloutState,
    observations: Observations,
    now: datetime,
) -> Step | None:
    """Promoted once production runs the candidate; None while it is not ready on it."""
    production = observations.child(ChildRole.PRODUCTION)
    if ready_on_config(production, status.candidate_fingerprint):
        message = f"production runs {describe(status.candidate_speculative)}"
        return promoted(status, now, "Promoted", message)
    if settings.strategy is not PromotionStrategy.OWNED and not patched(
        settings, status, observations
    ):
        return awaiting_owner(
            settings, status, observations.source, now
        )  # the owner's turn: no deadline
    return None


def _shadows_late(observations: Observations, deadline: int) -> str:
    shadows = [
        (role, observations.child(role)) for role in (ChildRole.BASELINE, ChildRole.CANDIDATE)
    ]
    reasons = "; ".join(_why_not_ready(role, child) for role, child in shadows if not child.ready)
    return f"shadows not ready after {deadline}s: {reasons}"


def _production_late(observations: Observations, deadline: int) -> str:
    why = _why_not_ready(ChildRole.PRODUCTION, observations.child(ChildRole.PRODUCTION))
    return f"production not ready on the candidate after {deadline}s ({why}); reverting"


# The phases that wait for Deployments to become ready: each one's step (None: still not
# ready), and the reason and message it rolls back with past progressDeadlineSeconds.
_WAITING: dict[Phase, tuple[PhaseStep, str, Callable[[Observations, int], str]]] = {
    Phase.DEPLOYING: (_deploying, "ProgressDeadlineExceeded", _shadows_late),
    Phase.PROMOTING: (_promoting, "PromotionFailed", _production_late),
}


def _waiting(
    settings: RolloutSettings,
    status: RolloutState,
    observations: Observations,
    now: datetime,
) -> Step:
    """A waiting phase's step; while it is still not ready, a rollback once the phase has
    waited past progressDeadlineSeconds (one rule for Deploying and Promoting), else wait."""
    step, reason, late = _WAITING[status.phase]
    if (stepped := step(settings, status, observations, now)) is not None:
        return stepped
    deadline = settings.progress_deadline_seconds
    waited = 0.0 if status.phase_since is None else (now - status.phase_since).total_seconds()
    if waited > deadline:
        return roll_back(status, now, reason, late(observations, deadline))
    return Step(status)


def _steady(
    settings: RolloutSettings,
    status: RolloutState,
    observations: Observations,
    now: datetime,
) -> Step:
    """Promoted <-> Degraded on production's availability."""
    production = observations.child(ChildRole.PRODUCTION)
    healthy = ready_on_config(production, fingerprint_of(status.stable_speculative))
    if status.phase is Phase.DEGRADED:
        if healthy:
            return enter(status, Phase.PROMOTED, now, "ProductionRecovered", "production ready")
        return Step(status)
    if healthy:  # judged after promotion: production's acceptance (the drift guard)
        return guard_step(settings, status, observations, now)
    grace = settings.progress_deadline_seconds
    if (now - production_unready_since(status, now)).total_seconds() > grace:
        why = _why_not_ready(ChildRole.PRODUCTION, production)
        message = f"production not ready for more than {grace}s: {why}"
        return enter(status, Phase.DEGRADED, now, "ProductionUnavailable", message, warning=True)
    return Step(status)


def guard_step(
    settings: RolloutSettings,
    status: RolloutState,
    observations: Observations,
    now: datetime,
) -> Step:
    """The drift guard's reaction to the look due now (`guarding.guard`), written into the
    status."""
    acceptance, latency = observations.production_acceptance, observations.production_latency
    plan = observations.guard_plan()
    reaction = guard(plan, guard_state(status), acceptance, now, latency)
    kind, message, events = reaction.reaction, reaction.message, reaction.events
    if kind is Reaction.KEEP:
        return Step(status)
    drift = None if reaction.drift is None else DriftRecord.model_validate(reaction.drift.fields())
    if kind in (Reaction.FORGET, Reaction.RECORD):
        return Step(status.model_copy(update={"drift": drift}), events)
    config, reason = status.stable_speculative, events[0].reason
    fallen = {
        "stable_speculative": None,
        "stable_fingerprint": fingerprint_of(None),
        "previous_stable_speculative": config,
    }
    if kind in (Reaction.ROLL_BACK, Reaction.FALL_BACK):
        previous = status.previous_stable_speculative
        returned = {"stable_speculative": previous, "stable_fingerprint": fingerprint_of(previous)}
        production = returned if kind is Reaction.ROLL_BACK else fallen
        return enter(
            status, Phase.ROLLED_BACK, now, reason, message, warning=True,
            verdict=Phase.ROLLED_BACK.value, drift=drift, **production,
        )  # fmt: skip
    base = status.model_copy(update={**fallen, "drift": drift})
    offer = config if reaction.offer else None
    desired = observations.analysis_plan().desired
    restarted = start_analysis(settings, desired, base, now, "Reanalysis", message, offer=offer)
    reanalysed = {"drift": drift, "reanalysed": fingerprint_of(config)}
    return Step(restarted.status.model_copy(update=reanalysed), (*events, *restarted.events))


def step_in_phase(
    settings: RolloutSettings,
    status: RolloutState,
    observations: Observations,
    now: datetime,
) -> Step:
    """The phase's own reconcile step."""
    phase = status.phase
    in_analysis = phase in (Phase.DEPLOYING, Phase.ANALYZING)
    if in_analysis and observations.traffic_error:
        return _traffic_failed(status, observations.traffic_error, now)
    if phase in (Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED):
        crashed = shadow_failure(status, observations, now)
        if crashed is not None:
            return crashed
    if phase in _WAITING:
        return _waiting(settings, status, observations, now)
    if phase is Phase.ANALYZING:
        return analyze(settings, status, observations, now)
    if phase in (Phase.PROMOTED, Phase.DEGRADED):
        return _steady(settings, status, observations, now)
    if phase is Phase.FAILED and observations.generation != status.observed_generation:
        return analyse_desired_unless_stable(
            settings,
            observations.analysis_plan().desired,
            status,
            now,
            "SpecChanged",
            "spec changed; analysis restarts",
        )
    return Step(status)
