"""`decide`: the whole rollout logic as one pure function.

    decide(status, observations, now) -> Decision

Why pure: status is computed, not accumulated, so deciding again gives the same output and
a restarted operator picks up where the last stopped. Semantics follow Argo Rollouts.
The order of a decision: docs/internals.md.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from functools import partial

from specdecode.domain.actions import apply_action
from specdecode.domain.adoption import (
    judgeable_source,
    restart_if_source_unjudgeable,
    sync_with_source,
    with_owner_view,
)
from specdecode.domain.analysis_plan import AnalysisPlan
from specdecode.domain.conditions import compute_conditions
from specdecode.domain.decision import Decision
from specdecode.domain.display import with_display
from specdecode.domain.effects import desired_children, traffic_plan
from specdecode.domain.evidence import (
    Parts,
    as_record,
    changed_parts,
    evidence_parts,
    joint_fingerprint,
    recorded_evidence,
)
from specdecode.domain.observations import ChildRole, Observations
from specdecode.domain.phases import ready_on_config, step_in_phase
from specdecode.domain.rollout_settings import RolloutSettings
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.transitions import (
    ANALYSIS_PHASES,
    Step,
    analyse_desired_unless_stable,
    describe,
    start_analysis,
)
from specdecode.speculative_document import fingerprint_of
from specdecode.vocabulary import Phase


def decide(status: RolloutState, observations: Observations, now: datetime) -> Decision:
    """The next status and the effects that make the world match it (see module docstring)."""
    settings = observations.rollout_settings()
    plan = observations.analysis_plan()
    observations.guard_plan()  # refused before anything is decided when missing
    source = judgeable_source(settings, observations.source)
    if settings.adopted and source is None:  # shadows of it are no copies
        kept = {ChildRole.PRODUCTION: observations.child(ChildRole.PRODUCTION)}
        observations = replace(observations, children=kept)
    desired = plan.desired
    lost = restart_if_source_unjudgeable(settings, desired, status, observations.source, now)
    if lost is not None:
        step = lost
    elif source is None:
        step = Step(status)
    else:
        step = sync_with_source(settings, desired, status, source, now)
    evidence = evidence_parts(plan.evidence, observations)
    step = step.then(_react_to_spec(settings, plan, step.status, evidence, now))
    reanalyse = partial(analyse_desired_unless_stable, settings, desired)
    named = describe(desired)
    step = step.then(apply_action(step.status, observations.action, now, named, reanalyse))
    visited = {step.status.phase}
    while True:
        before = step.status.phase
        step = step.then(step_in_phase(settings, step.status, observations, now))
        after = step.status.phase
        if after is before or after in visited:
            break
        visited.add(after)
    recorded = _with_evidence(step.status, evidence, now)
    final = with_owner_view(settings, _finish(recorded, observations, now), source, now)
    return Decision(
        status=final,
        children=desired_children(plan, final),
        traffic=traffic_plan(plan, final),
        events=step.events,
        clear_action=step.clear_action,
        stage_load=step.load,
    )


def _react_to_spec(
    settings: RolloutSettings,
    plan: AnalysisPlan,
    status: RolloutState,
    evidence: Parts,
    now: datetime,
) -> Step:
    """Start, restart or skip an analysis when the desired config (or its stages) changed."""
    desired = plan.desired
    desired_fp = fingerprint_of(desired)
    running = status.phase in ANALYSIS_PHASES or status.phase is Phase.PROMOTING
    # While (or after) its schedule offer is analysed, the status is still about the desired
    # config the offer came from (`analysedFor`); the offer itself written into the spec is
    # adopted as it is, analysis or promotion, without a restart (but an edit of the plan
    # written with it still restarts the analysis, below).
    if status.analysed_for is not None and desired_fp == status.candidate_fingerprint:
        status = status.model_copy(update={"analysed_for": None})
    if desired_fp != (status.analysed_for or status.candidate_fingerprint):
        reason = "AnalysisRestarted" if running else "AnalysisStarted"
        message = f"analysing {describe(desired)} against {describe(status.stable_speculative)}"
        return analyse_desired_unless_stable(settings, desired, status, now, reason, message)
    if status.phase not in ANALYSIS_PHASES:
        return Step(status)
    stage_names = [stage.name for stage in settings.stages]
    if [s.name for s in status.stages] != stage_names:
        message = f"analysis stages changed to {', '.join(stage_names)}; analysis restarts"
        return start_analysis(settings, desired, status, now, "AnalysisRestarted", message)
    if status.analysis_started_at == now:  # began in this reconcile: on today's evidence
        return Step(status)
    changed = changed_parts(plan.evidence, status, evidence)
    if changed:
        message = f"{', '.join(changed)} changed; the analysis restarts on the new evidence"
        return start_analysis(settings, desired, status, now, "EvidenceChanged", message)
    return Step(status)


def _with_evidence(status: RolloutState, evidence: Parts, now: datetime) -> RolloutState:
    """The evidence recorded: in full when the analysis began now, else a prompt set or
    source template read for the first time; nothing once the analysis has ended."""
    if status.phase not in ANALYSIS_PHASES:
        return status
    parts = recorded_evidence(status, evidence, fresh=status.analysis_started_at == now)
    if parts is None or as_record(parts) == status.evidence:
        return status
    return status.model_copy(
        update={"evidence": as_record(parts), "analysis_fingerprint": joint_fingerprint(parts)}
    )


def _finish(status: RolloutState, observations: Observations, now: datetime) -> RolloutState:
    """Derived fields: observedGeneration, conditions, display columns."""
    production = observations.child(ChildRole.PRODUCTION)
    production_ready = ready_on_config(production, fingerprint_of(status.stable_speculative))
    status = with_display(status).model_copy(
        update={"observed_generation": observations.generation}
    )
    conditions = compute_conditions(status, production_ready, observations.generation, now)
    return status.model_copy(update={"conditions": conditions})
