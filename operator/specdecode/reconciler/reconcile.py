"""One reconcile of one rollout: observe, decide, apply. A straight sequence of steps.

1. parse the spec (an invalid one becomes a Failed status, never an exception loop);
2. observe children, the action annotation, and the current stage's measurements;
3. `decide(spec, status, observations, now)`: pure, in the domain;
4. apply: render and server-side apply children, prune shadows, keep the stage run's
   load pods (Prompts traffic) or mirrors (Mirror traffic), write the status whole,
   consume the action annotation; the handler emits the events.
Every step is idempotent, so a reconcile interrupted anywhere is simply run again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from specdecode.adapters.kube.children import apply_children, observe_children, prune_shadows
from specdecode.adapters.kube.load_pods import LoadPod
from specdecode.adapters.kube.rollouts import clear_action, patch_status
from specdecode.adapters.metrics import EngineSelector
from specdecode.adapters.render import Owner, child_name, render_children
from specdecode.api import ACTION_ANNOTATION, GateType, SpecDecodeRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.decision import Decision
from specdecode.domain.effects import traffic_plan
from specdecode.domain.invalid import decide_invalid_spec
from specdecode.domain.machine import decide
from specdecode.domain.observations import (
    ChildRole,
    LatencySamples,
    MetricError,
    Observations,
    ServerStepHistograms,
    StageObservations,
)
from specdecode.reconciler.engine_version import with_engine_version_check
from specdecode.reconciler.load import (
    observe_load_pods,
    prompt_problem,
    read_windows,
    sync_load_pods,
    uses_load_pods,
)
from specdecode.reconciler.mirror import mirror_problem, observe_routes, steer_mirrors
from specdecode.reconciler.runtime import Runtime


@dataclass(frozen=True)
class RolloutRef:
    """The identity of the object being reconciled."""

    namespace: str
    name: str
    uid: str
    generation: int

    @property
    def key(self) -> str:
        """ "namespace/name", the key of per-rollout runtime state."""
        return f"{self.namespace}/{self.name}"

    @property
    def owner(self) -> Owner:
        """The owner of the rollout's children and load pods."""
        return Owner(self.name, self.namespace, self.uid)


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
    now = runtime.clock.now()
    status = parse_status(raw_status)
    try:
        spec = SpecDecodeRolloutSpec.model_validate(dict(raw_spec))
    except ValidationError as error:
        decision = decide_invalid_spec(status, _validation_message(error), ref.generation, now)
        pods = await observe_load_pods(runtime, ref.namespace, ref.name)
        await sync_load_pods(runtime, ref.owner, None, None, pods)
        routes = await observe_routes(runtime, ref.namespace)
        await steer_mirrors(runtime, ref.namespace, ref.name, None, None, routes)
        await _write_status(runtime, ref, status, decision.status)
        return decision

    children = await asyncio.to_thread(observe_children, runtime.kube, ref.namespace, ref.name)
    routes = await observe_routes(runtime, ref.namespace)
    pods = await observe_load_pods(runtime, ref.namespace, ref.name)
    observations = Observations(
        generation=ref.generation,
        children=children,
        action=annotations.get(ACTION_ANNOTATION),
        stage=await _observe_stage(runtime, ref, spec, status, pods, now.timestamp()),
        traffic_error=await _traffic_problem(runtime, ref, spec, status, pods)
        or mirror_problem(routes, ref.name, spec),
    )
    decision = decide(spec, status, observations, now)

    objects = render_children(ref.name, ref.namespace, ref.uid, spec, decision.children)
    manager = runtime.settings.field_manager
    await asyncio.to_thread(apply_children, runtime.kube, objects, manager)
    await asyncio.to_thread(
        prune_shadows, runtime.kube, ref.namespace, ref.name, decision.children.shadows
    )
    plan = decision.traffic
    await sync_load_pods(runtime, ref.owner, spec, plan, pods)
    await steer_mirrors(runtime, ref.namespace, ref.name, spec, plan, routes)
    # vLLM release check (engine GET /version vs the validated release): Degraded on mismatch.
    checked = await with_engine_version_check(
        runtime, ref.namespace, ref.name, spec, status, decision.status
    )
    await _write_status(runtime, ref, status, checked)
    if decision.clear_action and observations.action is not None:
        await asyncio.to_thread(
            clear_action, runtime.kube, ref.namespace, ref.name, observations.action
        )
    return decision


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
    stage_status, stage_spec = status.stages[index], spec.analysis.stages[index]
    if stage_status.measure_from is None or stage_status.measure_from.timestamp() > now:
        return None
    since = stage_status.measure_from.timestamp()
    acceptance = None
    if any(gate.type is GateType.ACCEPTANCE for gate in stage_spec.gates):
        engine = EngineSelector(ref.namespace, child_name(ref.name, ChildRole.CANDIDATE))
        acceptance = await runtime.acceptance.acceptance(
            engine, stage_status.measure_from, runtime.clock.now()
        )
    plan = traffic_plan(spec, status)
    baseline: LatencySamples | MetricError | None = None
    candidate: LatencySamples | MetricError | None = None
    if plan is not None and uses_load_pods(spec):
        baseline, candidate = await read_windows(runtime, plan, pods, since, now)
    server_step_itl = None
    if any(gate.type is GateType.TAIL_LATENCY for gate in stage_spec.gates):
        server_step_itl = await _server_step_itl(runtime, ref, stage_status.measure_from)
    return StageObservations(
        stage_name=stage_status.name,
        candidate_acceptance=acceptance,
        baseline_latency=baseline,
        candidate_latency=candidate,
        server_step_itl=server_step_itl,
    )


async def _server_step_itl(
    runtime: Runtime, ref: RolloutRef, start: datetime
) -> ServerStepHistograms | MetricError:
    """Both engines' step-ITL histograms over the window, from vLLM's own metrics.

    Judged by ServerStep TailLatency gates (Mirror traffic), a cross-check for the others.
    """
    end = runtime.clock.now()
    baseline, candidate = await asyncio.gather(
        *(
            runtime.step_latency.step_itl_histogram(
                EngineSelector(ref.namespace, child_name(ref.name, role)), start, end
            )
            for role in (ChildRole.BASELINE, ChildRole.CANDIDATE)
        )
    )
    if isinstance(baseline, MetricError):
        return baseline
    if isinstance(candidate, MetricError):
        return candidate
    return ServerStepHistograms(baseline=baseline, candidate=candidate)


async def _write_status(
    runtime: Runtime,
    ref: RolloutRef,
    old: SpecDecodeRolloutStatus,
    new: SpecDecodeRolloutStatus,
) -> None:
    if new != old:
        await asyncio.to_thread(patch_status, runtime.kube, ref.namespace, ref.name, new)
    runtime.metrics.observe(ref.namespace, ref.name, old, new)


def _validation_message(error: ValidationError) -> str:
    """Pydantic's errors as one line per field, with the spec's camelCase paths."""
    lines = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"])
        lines.append(f"spec.{path}: {item['msg']}")
    return "; ".join(lines)[:1000]
