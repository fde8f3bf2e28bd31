"""Observe: one read of everything a reconcile's decision needs, into one `Snapshot`.

Why: the decision reads nothing else (`domain.pass_decision`), so it stays pure. The spec is
parsed (an invalid one is a `Seen` with the problem) and resolved (`reconciler.workload`);
then, once each: the watched cache, the load pods' or splitter's windows, stage and guard
metrics, the engines' releases. The snapshot is immutable. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from specdecode.adapters.frozen import frozen
from specdecode.adapters.gate_boundary import observations_needed
from specdecode.adapters.kube.children import observe_children
from specdecode.adapters.kube.mirror_wanted import current_routes
from specdecode.adapters.kube.rollouts import RolloutRead, RolloutRef, StaleRollout
from specdecode.adapters.kube.workload import promotion_field_manager, read_promotion_files
from specdecode.adapters.load.splitter import uses_splitter
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.adapters.workload_source import Source
from specdecode.api import ACTION_ANNOTATION, SpecDecodeRolloutSpec, WrittenRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.analysis_plan import AnalysisPlan
from specdecode.domain.effects import traffic_plan
from specdecode.domain.gates.registry import LOAD_REPORT_NEEDS
from specdecode.domain.mirror_wanted import MirrorTraffic, mirror_route_problem, splitter_service
from specdecode.domain.observations import ChildRole, Observations, StageObservations
from specdecode.domain.pass_decision import Seen
from specdecode.domain.rollout_state import CONFIG_FIELDS, RolloutState
from specdecode.domain.stage_state import StageRun
from specdecode.domain.stages import evaluation_due
from specdecode.reconciler.analysis_boundary import plan_of
from specdecode.reconciler.engine_metrics import observe_engine_scrape
from specdecode.reconciler.engine_version import observe_engine_versions
from specdecode.reconciler.guard import observe_production
from specdecode.reconciler.guard_boundary import guard_plan_of
from specdecode.reconciler.load import LoadSeen, observe_load
from specdecode.reconciler.rollout_boundary import settings_of
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.spec_boundary import views_of
from specdecode.reconciler.splitter_reports import splitter_windows
from specdecode.reconciler.stage_reads import read_stage_metrics
from specdecode.reconciler.workload import resolve


@dataclass(frozen=True)
class Snapshot:
    """One reconcile's view: what the decision reads (`seen`), and what the apply needs
    beside the decision: the rollout, the action annotation to consume, whether this is
    its first reconcile (no status yet), and the source its shadows copy."""

    ref: RolloutRef
    now: datetime
    seen: Seen
    stored: SpecDecodeRolloutStatus
    """The status as read (the wire's): what apply's write compares with and starts from."""
    action: str | None = None
    first: bool = False
    source: Source | None = None
    promotion_files: Mapping[str, str] | None = None
    """The data of the rollout's promotion ConfigMap in the cluster (None: none of ours)."""
    mirror: MirrorTraffic | None = None
    """What the spec says of its mirrors (`spec_boundary`), which the apply steers."""
    spec: SpecDecodeRolloutSpec | None = None
    """The resolved spec (the wire's), for the apply and the renderers; None: invalid, or
    not resolvable from its source (the decision reads it on `seen.observations`)."""


def parse_status(raw: Mapping[str, Any] | None) -> SpecDecodeRolloutStatus:
    """The stored status, or a fresh one if absent or unreadable (e.g. an older schema)."""
    try:
        return SpecDecodeRolloutStatus.model_validate(dict(raw or {}))
    except ValidationError:
        return SpecDecodeRolloutStatus()


def state_of(status: SpecDecodeRolloutStatus) -> RolloutState:
    """The stored status as the domain's state, field for field (`status_boundary` turns
    the decided one back): the one conversion on the way in."""
    fields = {name: getattr(status, name) for name in RolloutState.model_fields}
    fields.update({name: setting_of(getattr(status, name)) for name in CONFIG_FIELDS})
    return RolloutState.model_validate(fields, from_attributes=True)


def validation_message(error: ValidationError) -> str:
    """Pydantic's errors as one line per field, with the spec's camelCase paths."""
    lines = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"])
        lines.append(f"spec.{path}: {item['msg']}")
    return "; ".join(lines)[:1000]


async def observe(runtime: Runtime, rollout: RolloutRead) -> Snapshot:
    """Everything one reconcile of the rollout decides on, read once and frozen all the way
    down (`adapters.frozen`); `StaleRollout` for a copy older than our own last status
    write (the watch has not delivered it yet). An invalid spec reads nothing more."""
    ref = rollout.ref
    if runtime.write_echo.is_stale(ref.key, ref.resource_version):
        raise StaleRollout(f"{ref.key} at {ref.resource_version} predates our status write")
    now = runtime.clock.now()
    stored = parse_status(rollout.status)
    status = state_of(stored)
    try:
        written = WrittenRolloutSpec.model_validate(dict(rollout.spec))
    except ValidationError as error:
        runtime.engine_series_memory.forget(ref.key)  # no engines to check: no wake for it
        problem = validation_message(error)
        seen = Seen(status, ref.generation, problem=problem)
        return frozen(Snapshot(ref, now, seen, stored))
    first = not rollout.status
    action = rollout.annotations.get(ACTION_ANNOTATION)
    read = await _read_cluster(runtime, ref, written, (stored, status), now, action, first)
    return frozen(read)


async def _read_cluster(
    runtime: Runtime,
    ref: RolloutRef,
    written: WrittenRolloutSpec,
    statuses: tuple[SpecDecodeRolloutStatus, RolloutState],
    now: datetime,
    action: str | None,
    first: bool,
) -> Snapshot:
    """What the cluster says of a rollout with a valid spec: its source, children, load,
    routes, metrics and promotion files (the snapshot, before it is frozen); `statuses`:
    the stored status and its domain state."""
    stored, status = statuses
    manager = promotion_field_manager(runtime.settings.field_manager)
    resolved = await resolve(runtime, ref.namespace, ref.name, written, manager)
    if resolved.spec is None:  # model or engine left to a source that does not state them
        runtime.engine_series_memory.forget(ref.key)
        source_name = None if written.workload_ref is None else resolved.source_name
        seen = Seen(status, ref.generation, problem=resolved.problem, source_name=source_name)
        return Snapshot(ref, now, seen, stored)
    spec, source = resolved.spec, resolved.source
    children = observe_children(
        runtime.cluster.rollout_deployments(ref.namespace, ref.name),
        runtime.cluster.rollout_pods(ref.namespace, ref.name),
    )
    if source is not None:  # production is the source (workloadRef), not a child of ours
        children[ChildRole.PRODUCTION] = source.observation.state
    views = views_of(spec)
    routes = await current_routes(runtime.cluster, runtime.kube, ref.namespace, views.mirror)

    analysis = plan_of(spec)
    stage, load = await _observe_look(runtime, ref, spec, analysis, status, now)
    guard = guard_plan_of(spec)
    production_acceptance, production_latency = await observe_production(
        runtime, ref, spec, status, now, guard
    )
    observations = Observations(
        generation=ref.generation,
        children=children,
        action=action,
        stage=stage,
        traffic_error=load.problem or mirror_route_problem(routes, ref.name, views.mirror),
        production_acceptance=production_acceptance,
        production_latency=production_latency,
        guard=guard,
        source=None if source is None else source.observation,
        prompts_digest=load.prompts_digest,
        plan=analysis,
        settings=settings_of(spec, status.candidate_speculative),
    )
    seen = Seen(
        status,
        ref.generation,
        observations,
        splitter_service=splitter_service(ref.name),
        running_versions=await observe_engine_versions(runtime, ref, spec),
        engine_scrape=await observe_engine_scrape(runtime, ref, views.stage_needs),
        source_problem=None if source is None or source.judged else source.observation.problem,
    )
    files = await _promotion_files(runtime, ref, written.workload_ref is not None, status)
    return Snapshot(ref, now, seen, stored, action, first, source, files, views.mirror, spec)


async def _promotion_files(
    runtime: Runtime, ref: RolloutRef, adopted: bool, status: RolloutState
) -> Mapping[str, str] | None:
    """What the rollout's promotion ConfigMap holds: from the cluster, once per process
    (a restarted one then deletes a stale one as the previous would have), else as this
    process last read or wrote it. Only an adopted rollout (or one that was) has one."""
    known = runtime.write_echo.promotion_files
    if ref.key not in known:
        if not adopted and status.workload is None:
            return None
        data = await asyncio.to_thread(read_promotion_files, runtime.kube, ref.owner)
        known[ref.key] = None if data is None else MappingProxyType(data)
    return known[ref.key]


async def _observe_look(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    analysis: AnalysisPlan,
    status: RolloutState,
    now: datetime,
) -> tuple[StageObservations | None, LoadSeen]:
    """The due look's measurements (None: no look is due) and the load pods' part."""
    index, stage_status = status.current_stage_index, _due_stage(runtime, spec, status, now)
    since = stage_status.measure_from if stage_status is not None else None
    needs = (
        observations_needed(spec, index) if since is not None and index is not None else frozenset()
    )
    plan = traffic_plan(analysis, status)
    look = None  # (plan, since, now) when the due look reads the load pods' or splitter's
    if since is not None and plan is not None and needs & LOAD_REPORT_NEEDS:
        look = (plan, since.timestamp(), now.timestamp())
    load = await observe_load(runtime, ref, spec, status, plan, look)
    windows = load.windows
    if look is not None and uses_splitter(spec):
        windows = await splitter_windows(runtime, ref, *look)
    stage = None
    if stage_status is not None and since is not None:
        metrics = await read_stage_metrics(runtime, ref, spec, since, needs)
        stage = StageObservations(
            stage_name=stage_status.name,
            candidate_acceptance=metrics.acceptance,
            baseline_latency=windows[0],
            candidate_latency=windows[1],
            server_step_itl=metrics.server_step_itl,
            engine_outcomes=metrics.engine_outcomes,
        )
    return stage, load


def _due_stage(
    runtime: Runtime, spec: SpecDecodeRolloutSpec, status: RolloutState, now: datetime
) -> StageRun | None:
    """The running stage when a look of it is due now (its measuring window has begun and
    its interval has passed), else None: ask neither Prometheus nor the load pods."""
    index = status.current_stage_index
    if index is None or index >= len(status.stages) or index >= len(spec.analysis.stages):
        return None
    stage_status = status.stages[index]
    if stage_status.measure_from is None or stage_status.measure_from.timestamp() > now.timestamp():
        return None
    if not evaluation_due(stage_status, spec.analysis.interval_seconds, runtime.clock.now()):
        return None
    return stage_status
