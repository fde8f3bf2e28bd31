"""One reconcile of one rollout: observe, decide, apply. A straight sequence of steps.

1. parse the spec (an invalid one becomes a Failed status, never an exception loop) and
   resolve it: a `workloadRef`'s source states the `model` and `engine` left out (one
   that does not: Pending, Degraded `WorkloadUnavailable`, no analysis);
2. observe children, the action annotation, the current stage's measurements, while an
   analysis runs the prompt set's content hash (its evidence) and, once Promoted,
   production's counters for the drift guard's look (`guard`); children and routes come
   from the watched cache (`runtime.cluster`), not from the API server;
3. `decide(spec, status, observations, now)`: pure, in the domain;
4. apply (`_apply`, the one path every decision takes, the invalid-spec one included):
   post the transition's Events (named so a repeat is refused), write the status guarded by
   the resourceVersion it was computed from, then make children, the stage run's load pods
   (Prompts traffic) and route mirrors (Mirror traffic) match the decision, writing only
   what the cache shows to differ, and consume the action annotation. (A new rollout's
   children come first: there is no earlier status for them to contradict.)
Every step is idempotent, so a reconcile interrupted anywhere is simply run again; a copy
of the rollout older than our own last write raises `StaleRollout` before anything is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from specdecode.adapters.kube.children import observe_children
from specdecode.adapters.kube.load_pods import LoadPod
from specdecode.adapters.kube.rollouts import StaleRollout
from specdecode.adapters.metrics import EngineSelector
from specdecode.adapters.render import child_name
from specdecode.api import ACTION_ANNOTATION, SpecDecodeRolloutSpec, WrittenRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.analyzing import observations_needed
from specdecode.domain.cadence import next_timed_event
from specdecode.domain.decision import Decision
from specdecode.domain.effects import traffic_plan
from specdecode.domain.gates.registry import LOAD_REPORT_NEEDS, Need
from specdecode.domain.invalid import decide_invalid_spec
from specdecode.domain.machine import decide
from specdecode.domain.observations import (
    ChildRole,
    EngineOutcomePair,
    LatencySamples,
    MetricError,
    Observations,
    ServerStepHistograms,
    StageObservations,
)
from specdecode.domain.source_spec import decide_unresolved
from specdecode.domain.stages import evaluation_due
from specdecode.reconciler.apply import (
    RolloutRef,
    apply_children_of,
    apply_mirrors_and_action,
    commit_status,
    next_reconcile_in,
    write_findings,
)
from specdecode.reconciler.engine_metrics import with_engine_metrics_check
from specdecode.reconciler.engine_version import with_engine_version_check
from specdecode.reconciler.guard import observe_production
from specdecode.reconciler.load import (
    observe_load_pods,
    observe_prompts_digest,
    prompt_problem,
    read_windows,
    sync_load_pods,
    uses_load_pods,
)
from specdecode.reconciler.mirror import mirror_problem, observe_routes, with_mirror_status
from specdecode.reconciler.ownership import Found, carry_findings, with_foreign_children
from specdecode.reconciler.promotion_patch import (
    keep_files,
    patch_source,
    promotion_manager,
    with_patch_conflict,
)
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.splitter import (
    observe_splitter_pods,
    read_splitter_windows,
    sync_splitter,
    uses_splitter,
)
from specdecode.reconciler.workload import Source, resolve, with_source_problem

__all__ = [
    "RolloutRef",
    "StaleRollout",
    "next_reconcile_in",
    "parse_status",
    "reconcile",
    "validation_message",
]

T = TypeVar("T")


def parse_status(raw: Mapping[str, Any] | None) -> SpecDecodeRolloutStatus:
    """The stored status, or a fresh one if absent or unreadable (e.g. an older schema)."""
    try:
        return SpecDecodeRolloutStatus.model_validate(dict(raw or {}))
    except ValidationError:
        return SpecDecodeRolloutStatus()


async def reconcile(
    runtime: Runtime,
    ref: RolloutRef,
    raw_spec: Mapping[str, Any],
    raw_status: Mapping[str, Any] | None,
    annotations: Mapping[str, str],
) -> Decision:
    """Bring the rollout's children, traffic and status in line with its spec."""
    if runtime.write_echo.is_stale(ref.key, ref.resource_version):
        raise StaleRollout(f"{ref.key} at {ref.resource_version} predates our status write")
    now = runtime.clock.now()
    status = parse_status(raw_status)
    action = annotations.get(ACTION_ANNOTATION)
    try:
        written = WrittenRolloutSpec.model_validate(dict(raw_spec))
    except ValidationError as error:
        return await _without_spec(
            runtime,
            ref,
            status,
            decide_invalid_spec(status, validation_message(error), ref.generation, now),
        )
    resolved = await resolve(runtime, ref.namespace, ref.name, written, promotion_manager(runtime))
    if resolved.spec is None:  # model or engine left to a source that does not state them
        problem = resolved.problem or "the spec cannot be resolved"
        if written.workload_ref is None:
            unresolved = decide_invalid_spec(status, problem, ref.generation, now)
        else:
            unresolved = decide_unresolved(
                status, resolved.source_name, problem, ref.generation, now
            )
        return await _without_spec(runtime, ref, status, unresolved)
    spec, source = resolved.spec, resolved.source

    children = observe_children(
        runtime.cluster.rollout_deployments(ref.namespace, ref.name),
        runtime.cluster.rollout_pods(ref.namespace, ref.name),
    )
    if source is not None:  # production is the source (workloadRef), not a child of ours
        children[ChildRole.PRODUCTION] = source.observation.state
    routes = await observe_routes(runtime, ref.namespace, spec)
    pods = observe_load_pods(runtime, ref.namespace, ref.name)
    production_acceptance, production_latency = await observe_production(
        runtime, ref, spec, status, now
    )
    observations = Observations(
        generation=ref.generation,
        children=children,
        action=action,
        stage=await _observe_stage(runtime, ref, spec, status, pods, now.timestamp()),
        traffic_error=await _traffic_problem(runtime, ref, spec, status, pods)
        or mirror_problem(routes, ref.name, spec),
        production_acceptance=production_acceptance,
        production_latency=production_latency,
        source=None if source is None else source.observation,
        prompts_digest=await observe_prompts_digest(runtime, ref.namespace, spec, status),
    )
    decision = decide(spec, status, observations, now)
    decision = with_mirror_status(ref.name, spec, decision)
    # vLLM release check (engine GET /version vs the validated release): Degraded on mismatch.
    decision = await with_engine_version_check(runtime, ref, spec, status, decision)
    # Objects holding a child's name first: they block the analysis, which the scrape
    # check's MetricsUnavailable (Degraded keeps the first reason) would otherwise hide.
    decision = with_foreign_children(status, carry_findings(status, decision), now)
    decision = with_source_problem(runtime, status, decision, source)
    decision = with_patch_conflict(status, decision, now)
    # Scrape check (Prometheus holds the settled engines' series): MetricsUnavailable if not.
    decision = await with_engine_metrics_check(runtime, ref, spec, status, decision)
    decision = replace(decision, wake_at=next_timed_event(spec, decision.status, now))
    await _apply(runtime, ref, spec, status, decision, action, not raw_status, source)
    return decision


async def _without_spec(
    runtime: Runtime, ref: RolloutRef, status: SpecDecodeRolloutStatus, decision: Decision
) -> Decision:
    """Apply a decision made without a spec to act on (invalid, or not resolvable from the
    source): shadows, load pods and mirrors go; production is left as it is."""
    runtime.engine_series_memory.forget(ref.key)  # no engines to check: no wake for it
    decision = carry_findings(status, decision)
    await _apply(runtime, ref, None, status, decision, None)
    return decision


async def _apply(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec | None,
    old: SpecDecodeRolloutStatus,
    decision: Decision,
    action: str | None,
    first: bool = False,
    source: Source | None = None,
) -> None:
    """Make the world match `decision`; `spec` None: unreadable (production left as is).

    A rollout with no status yet (`first`: its first reconcile) gets its children before its
    status: nothing it could act on can be stale, since no status was ever written from
    which a later decision could differ, and a new rollout's children need not wait for
    two writes. If the status write is refused, the next reconcile re-applies them from
    the fresh copy (a no-op where they match).
    """
    found = Found()  # what the writes below find in their way: stored in status
    if first:
        await apply_children_of(runtime, ref, spec, decision, source, found)
        version = await commit_status(runtime, ref, old, decision)
    else:
        version = await commit_status(runtime, ref, old, decision)
        await apply_children_of(runtime, ref, spec, decision, source, found)
    if spec is not None:
        await patch_source(runtime, ref.key, spec, decision.status, source, found)
        await keep_files(runtime, ref, spec, decision.status, found)
    pods = observe_load_pods(runtime, ref.namespace, ref.name)
    await sync_load_pods(runtime, ref.owner, spec, decision.traffic, pods, found)
    await sync_splitter(runtime, ref.owner, spec, decision.traffic, found)
    # Before the action annotation is consumed: that metadata write moves the version.
    await write_findings(runtime, ref, decision.status, version, found)
    await apply_mirrors_and_action(runtime, ref, spec, decision, action)


async def _traffic_problem(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    status: SpecDecodeRolloutStatus,
    pods: list[LoadPod],
) -> str | None:
    """Why the running stage's load cannot start: its prompt set, checked until pods exist."""
    plan = traffic_plan(spec, status)
    if plan is None or not uses_load_pods(spec) or pods:
        return None
    return await prompt_problem(runtime, ref.namespace, spec)


async def _observe_stage(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    status: SpecDecodeRolloutStatus,
    pods: list[LoadPod],
    now: float,
) -> StageObservations | None:
    """Measurements of the stage in progress, from its measuring window only."""
    index = status.current_stage_index
    if index is None or index >= len(status.stages) or index >= len(spec.analysis.stages):
        return None
    stage_status = status.stages[index]
    if stage_status.measure_from is None or stage_status.measure_from.timestamp() > now:
        return None
    if not evaluation_due(stage_status, spec.analysis.interval_seconds, runtime.clock.now()):
        return None  # no look is due: ask neither Prometheus nor the load pods
    since = stage_status.measure_from.timestamp()
    needs = observations_needed(spec, index)  # what the stage's measured gates declare
    acceptance = None
    if Need.ACCEPTANCE_COUNTERS in needs:
        engine = EngineSelector(ref.namespace, child_name(ref.name, ChildRole.CANDIDATE))
        acceptance = await runtime.acceptance.acceptance(
            engine, stage_status.measure_from, runtime.clock.now()
        )
    plan = traffic_plan(spec, status)
    baseline: LatencySamples | MetricError | None = None
    candidate: LatencySamples | MetricError | None = None
    if plan is not None and uses_load_pods(spec) and needs & LOAD_REPORT_NEEDS:
        baseline, candidate = await read_windows(runtime, ref.key, plan, pods, since, now, ref.uid)
    elif plan is not None and uses_splitter(spec) and needs & LOAD_REPORT_NEEDS:
        splitters = observe_splitter_pods(runtime, ref.namespace, ref.name)
        baseline, candidate = await read_splitter_windows(
            runtime, ref.key, plan, splitters, since, now, ref.uid
        )
    server_step_itl = None
    if Need.SERVER_STEP_HISTOGRAMS in needs:
        server_step_itl = await _server_step_itl(runtime, ref, stage_status.measure_from)
    outcomes = None
    if Need.ENGINE_OUTCOMES in needs and spec.analysis.traffic.server_side_mirror:
        outcomes = await engine_outcomes(runtime, ref, spec, stage_status.measure_from)
    return StageObservations(
        stage_name=stage_status.name,
        candidate_acceptance=acceptance,
        baseline_latency=baseline,
        candidate_latency=candidate,
        server_step_itl=server_step_itl,
        engine_outcomes=outcomes,
    )


async def _server_step_itl(
    runtime: Runtime, ref: RolloutRef, start: datetime
) -> ServerStepHistograms | MetricError:
    """Both engines' step-ITL histograms over the window, from vLLM's own metrics.

    Judged by ServerStep TailLatency gates (Mirror traffic), a cross-check for the others.
    """
    end = runtime.clock.now()
    both = await _both_engines(
        ref, lambda engine: runtime.step_latency.step_itl_histogram(engine, start, end)
    )
    if isinstance(both, MetricError):
        return both
    return ServerStepHistograms(baseline=both[0], candidate=both[1])


async def engine_outcomes(
    runtime: Runtime, ref: RolloutRef, spec: SpecDecodeRolloutSpec, start: datetime
) -> EngineOutcomePair | MetricError:
    """Both shadow engines' finished requests by reason over the window (vLLM's counter).

    Read only for Mirror traffic, whose responses never reach the operator: the engines'
    count is its ErrorRate evidence (`domain.gates.mirror_outcomes`).
    """
    end = runtime.clock.now()
    both = await _both_engines(
        ref, lambda engine: runtime.request_outcomes.request_outcomes(engine, start, end)
    )
    if isinstance(both, MetricError):
        return both
    share = spec.analysis.traffic.mirror_percent / 100
    return EngineOutcomePair(baseline=both[0], candidate=both[1], mirror_share=share)


async def _both_engines(
    ref: RolloutRef, read: Callable[[EngineSelector], Awaitable[T | MetricError]]
) -> tuple[T, T] | MetricError:
    """One read of the baseline's and the candidate's engine at once: both answers, or the
    first error (a look never judges one side's data alone)."""
    baseline, candidate = await asyncio.gather(
        *(
            read(EngineSelector(ref.namespace, child_name(ref.name, role)))
            for role in (ChildRole.BASELINE, ChildRole.CANDIDATE)
        )
    )
    if isinstance(baseline, MetricError):
        return baseline
    if isinstance(candidate, MetricError):
        return candidate
    return baseline, candidate


def validation_message(error: ValidationError) -> str:
    """Pydantic's errors as one line per field, with the spec's camelCase paths."""
    lines = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"])
        lines.append(f"spec.{path}: {item['msg']}")
    return "; ".join(lines)[:1000]
