"""The Analyzing phase: evaluate the current stage's gates and decide the stage's outcome.

At each look, in order: a non-dry-run gate past `failureLimit` rolls back (GateFailed; it
wins over everything, a pause included); too many consecutive Errors roll back
(MetricsUnavailable: a flaky backend is never a pass); every enforced gate Successful after
`minDurationSeconds` passes the stage (fail closed: no enforced gate, no pass); undecided at
`maxDurationSeconds` is Inconclusive, run again up to `inconclusiveLimit`. With
`analysis.manual` gates are measured, not enforced. More: docs/internals.md.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from specdecode.domain.analysis_plan import AnalysisPlan
from specdecode.domain.certification import Certification
from specdecode.domain.close_call import close_call_of
from specdecode.domain.concurrency_verdict import (
    StageOutcome,
    lower_pass,
    lower_pass_text,
    offer_text,
    schedule_offer,
)
from specdecode.domain.gate_boundary import evaluate_gate
from specdecode.domain.gates import LookPlan
from specdecode.domain.load_status import LoadLook, load_status
from specdecode.domain.observations import Observations
from specdecode.domain.rollout_settings import RolloutSettings, schedule_key
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.speculative_setting import SpeculativeSetting
from specdecode.domain.stage_state import GateRecord, StageRun
from specdecode.domain.stages import (
    evaluation_due,
    evidence_of,
    inconclusive_stage_count,
    is_measuring,
    max_duration_reached,
    measured_seconds,
    merge_gate_results,
    min_duration_reached,
    start_stage,
)
from specdecode.domain.transitions import Step, enter, notify, roll_back, start_analysis
from specdecode.vocabulary import GateVerdict, Phase, ScheduleFallback, StagePhase


def _with_stage(status: RolloutState, index: int, stage: StageRun) -> RolloutState:
    stages = list(status.stages)
    stages[index] = stage
    return status.model_copy(
        update={"stages": stages, "current_stage": stage.name, "current_stage_index": index}
    )


def begin_stage(
    settings: RolloutSettings, status: RolloutState, index: int, now: datetime
) -> RolloutState:
    """Start stage `index` now (keeping its count of earlier inconclusive runs)."""
    runs = status.stages[index].inconclusive_runs if index < len(status.stages) else 0
    evidence = evidence_of(settings.server_side_mirror, settings.splitter_mirror)
    return _with_stage(status, index, start_stage(settings.stages[index], now, runs, evidence))


def analyze(
    settings: RolloutSettings,
    status: RolloutState,
    observations: Observations,
    now: datetime,
) -> Step:
    """One reconcile of the Analyzing phase."""
    index = status.current_stage_index or 0
    stage_settings = settings.stages[index]
    stage = status.stages[index]
    if not is_measuring(stage, now):
        return Step(status)
    if evaluation_due(stage, settings.interval_seconds, now):
        seen = observations.stage
        window = seen if seen is not None and seen.stage_name == stage_settings.name else None
        candidate = status.candidate_speculative
        plan = look_plan(settings, index, measured_seconds(stage, now), candidate)
        previous = merge_gate_results(stage_settings, stage.gates)
        kernel = certifications(settings, index, candidate)
        gates = [
            evaluate_gate(gate, window, result, now, plan, kernel[gate.name])
            for gate, result in zip(stage_settings.gates, previous, strict=True)
        ]
        stage = stage.model_copy(update={"gates": gates, "phase": StagePhase.RUNNING})
        look = LoadLook(stage.name, stage.started_at, load_status(window))
        judged = _judge(
            settings, _with_stage(status, index, stage), index, now, observations.analysis_plan()
        )
        return replace(judged, load=look)
    status = _with_stage(status, index, stage)
    return _judge(settings, status, index, now, observations.analysis_plan())


def look_plan(
    settings: RolloutSettings,
    index: int,
    measured: float,
    candidate: SpeculativeSetting | None = None,
) -> LookPlan:
    """What the gates' error spending and measures need to know about this look
    (`candidate`: the config under analysis, when its schedule is known)."""
    concurrency = settings.stages[index].concurrency
    return LookPlan(
        measured_seconds=measured,
        max_seconds=float(settings.stages[index].max_duration_seconds),
        runs=settings.inconclusive_limit + 1,
        method=settings.method,
        mirror=settings.server_side_mirror,  # the splitter's evidence is client-side
        may_not_draft=candidate is not None and candidate.k_zero_possible_at(concurrency),
        unsent=settings.unsent,
    )


def certifications(
    settings: RolloutSettings, index: int, candidate: SpeculativeSetting | None = None
) -> dict[str, Certification]:
    """The kernel's answer for each gate of stage `index`, by gate name, for `candidate`
    (the config under analysis), as the boundary evaluated it."""
    return settings.certifications(
        index, None if candidate is None else schedule_key(candidate.schedule)
    )


def _judge(
    settings: RolloutSettings,
    status: RolloutState,
    index: int,
    now: datetime,
    plan: AnalysisPlan,
) -> Step:
    """Apply the precedence in the module docstring to the stage's latest results."""
    stage_settings = settings.stages[index]
    stage = status.stages[index]
    kernel = certifications(settings, index, status.candidate_speculative)
    # A result whose gate the spec no longer has is held to a pass, as before (fail closed).
    absent = Certification(True, True, True, None)
    enforced = [gate for gate in stage.gates if kernel.get(gate.name, absent).may_fail]
    certifying = [gate for gate in stage.gates if kernel.get(gate.name, absent).certifies]
    if settings.manual:
        if min_duration_reached(stage_settings, stage, now):
            # A person decides: the message puts what the gates said in front of them,
            # failures first, so a Failed gate is never hidden behind "measured".
            ranked = sorted(stage.gates, key=lambda g: g.verdict is not GateVerdict.FAILED)
            said = "; ".join(_gate_summary(gate) for gate in ranked) or "no gates"
            return _stage_succeeded(
                settings, status, index, now, f"measured (manual analysis, not gated): {said}"
            )
        return Step(status)
    failed = [gate for gate in enforced if gate.failures > settings.failure_limit]
    if failed:
        return _failed(settings, status, index, failed, now, plan)
    erroring = [g for g in enforced if g.consecutive_errors > settings.consecutive_error_limit]
    if erroring:
        detail = "; ".join(
            f"{stage.name}/{gate.name}: {gate.consecutive_errors} errors in a row: {gate.reason}"
            for gate in erroring
        )
        ended = _finish(stage, StagePhase.INCONCLUSIVE, now, detail)
        return roll_back(_with_stage(status, index, ended), now, "MetricsUnavailable", detail)
    if passed_on_evidence(certifying) and min_duration_reached(stage_settings, stage, now):
        summary = "; ".join(_gate_summary(gate) for gate in stage.gates)
        return _stage_succeeded(settings, status, index, now, summary)
    if max_duration_reached(stage_settings, stage, now):
        why = None if certifying else NOTHING_ENFORCED
        return _stage_inconclusive(settings, status, index, now, why)
    return Step(status)


def _failed(
    settings: RolloutSettings,
    status: RolloutState,
    index: int,
    failed: list[GateRecord],
    now: datetime,
    plan: AnalysisPlan,
) -> Step:
    """Roll back on the failed gates, saying where the config paid and breaks even and
    offering a schedule (`concurrency_verdict`); analyse the offer instead when opted in."""
    stage = status.stages[index]
    detail = "; ".join(f"{stage.name}/{gate.name}: {gate.reason}" for gate in failed)
    candidate = status.candidate_speculative
    outcomes = [_outcome(run) for run in status.stages]
    found = lower_pass(plan, outcomes, index, [gate.type for gate in failed])
    entries = None
    if candidate is not None:
        scheduled = candidate.schedule is not None
        entries = schedule_offer(plan, candidate.num_speculative_tokens, scheduled, found)
    offer = offered_config(candidate, entries, status.stable_fingerprint)
    analyse = offer is not None and settings.schedule_fallback is ScheduleFallback.ANALYZE
    detail += lower_pass_text(found) + offer_text(None if offer is None else entries, analyse)
    ended = _with_stage(status, index, _finish(stage, StagePhase.FAILED, now, detail))
    if analyse:
        return start_analysis(
            settings, plan.desired, ended, now, "ScheduleAnalysisStarted", detail, offer=offer
        )
    return roll_back(ended.model_copy(update={"schedule_offer": offer}), now, "GateFailed", detail)


def _outcome(stage: StageRun) -> StageOutcome:
    """A stage run as the concurrency verdict reads it."""
    passed = {gate.type for gate in stage.gates if gate.verdict is GateVerdict.SUCCESSFUL}
    return StageOutcome(stage.phase, frozenset(passed))


def offered_config(
    candidate: SpeculativeSetting | None, entries: list[list[int]] | None, stable: str | None
) -> SpeculativeSetting | None:
    """The candidate with the offered schedule `entries`, or None: none offered, or
    production (fingerprint `stable`) runs that very config already."""
    if candidate is None or entries is None:
        return None
    offer = candidate.with_schedule(entries)
    return None if offer.fingerprint() == stable else offer


NOTHING_ENFORCED = (
    "no enforced gate (none judged for this method and traffic, or all dry run or fail "
    "only): nothing can pass this stage"
)


def passed_on_evidence(enforced: list[GateRecord]) -> bool:
    """Fail closed: at least one enforced gate, each Successful on data it judged.

    Why not `all(...)`: it is true of no gates at all, and a stage would then pass on no
    evidence after minDurationSeconds. A Successful verdict always carries the units it
    judged; one without (a status written by hand or by an older operator) is no evidence.
    """
    return bool(enforced) and all(
        gate.verdict is GateVerdict.SUCCESSFUL and _judged_data(gate) for gate in enforced
    )


def _judged_data(gate: GateRecord) -> bool:
    return bool(gate.samples) or bool(gate.units)


def _gate_summary(gate: GateRecord) -> str:
    """One gate in a stage's message; a dry-run gate says it was not enforced, a fail-only
    gate that the stage did not wait for it."""
    if gate.dry_run:
        label = f"{gate.name} (dry run, {gate.verdict.value}, not enforced)"
    elif gate.fail_only:
        label = f"{gate.name} (fail only, {gate.verdict.value})"
    else:
        label = gate.name
    return f"{label}: {gate.reason}"


def _undecided_summary(gate: GateRecord) -> str:
    """One gate in an undecided stage's message; a close call leads with its words, so on
    call reads that the estimate sat at the limit and which limits would have decided."""
    said = f"{gate.name}: {gate.verdict.value}: {gate.reason}"
    close = close_call_of(
        gate.type,
        gate.close_call,
        gate.value,
        gate.lower_bound,
        gate.upper_bound,
        gate.threshold,
    )
    return said if close is None else f"{gate.name}: {gate.verdict.value}, {close} ({gate.reason})"


def _finish(stage: StageRun, phase: StagePhase, now: datetime, message: str) -> StageRun:
    return stage.model_copy(update={"phase": phase, "finished_at": now, "message": message})


def _stage_succeeded(
    settings: RolloutSettings,
    status: RolloutState,
    index: int,
    now: datetime,
    summary: str,
) -> Step:
    """Close the stage; start the next one, or end the analysis (pause or promote)."""
    stage = status.stages[index]
    status = _with_stage(status, index, _finish(stage, StagePhase.SUCCESSFUL, now, summary))
    message = f"stage {stage.name} Successful: {summary}"
    stages = settings.stages
    if index + 1 < len(stages):
        status = begin_stage(settings, status, index + 1, now)
        next_message = f"{message}; stage {stages[index + 1].name} started"
        return notify(status, "StageSucceeded", next_message)
    if settings.manual or settings.pause_before_promotion:
        why = "manual analysis" if settings.manual else "pauseBeforePromotion"
        text = f"{message}; waiting for specdecode.io/action=promote ({why})"
        return enter(status, Phase.PAUSED, now, "AwaitingPromotion", text)
    return enter(status, Phase.PROMOTING, now, "GatesPassed", f"{message}; promoting")


def _stage_inconclusive(
    settings: RolloutSettings,
    status: RolloutState,
    index: int,
    now: datetime,
    why: str | None = None,
) -> Step:
    """The stage ran out of time undecided: re-run it, or roll back past the limit."""
    stage_settings = settings.stages[index]
    stage = status.stages[index]
    undecided = why or "; ".join(
        _undecided_summary(g) for g in stage.gates if g.verdict is not GateVerdict.SUCCESSFUL
    )
    detail = f"{stage.name}: undecided after {stage_settings.max_duration_seconds}s: {undecided}"
    ended = _finish(stage, StagePhase.INCONCLUSIVE, now, detail).model_copy(
        update={"inconclusive_runs": stage.inconclusive_runs + 1}
    )
    status = _with_stage(status, index, ended)
    if inconclusive_stage_count(status.stages) > settings.inconclusive_limit:
        return roll_back(status, now, "Inconclusive", detail)
    status = begin_stage(settings, status, index, now)
    return notify(status, "StageRestarted", f"{detail}; running it again", warning=True)
