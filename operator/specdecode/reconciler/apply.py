"""Applying a decision: the one path every decision takes, the invalid-spec one included.

Why this order (one Event per transition, no effect of a stale copy): the transition's
Events; the status, guarded by its resourceVersion (the commit point: a 409 withdraws this
attempt's Events and stops); then children, route mirrors and the action annotation, each
written only where the cache differs. Each step is idempotent; a new rollout's children go
first. The case-by-case reasoning and what is left: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import hashlib

from specdecode.adapters.kube.children import (
    delete_children,
    shadows_to_delete,
    stale_objects,
)
from specdecode.adapters.kube.events import EventTarget, post_event, withdraw_event
from specdecode.adapters.kube.findings import Found
from specdecode.adapters.kube.load_pods import observed_load_pods
from specdecode.adapters.kube.owned import apply_children
from specdecode.adapters.kube.rollouts import RolloutRef, StaleRollout, clear_action, patch_status
from specdecode.adapters.load.pods import LOAD_ROLE
from specdecode.adapters.render import render_children
from specdecode.adapters.render_adopted import render_adopted_shadows
from specdecode.adapters.workload_source import Source
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.api.status_findings import ApplyFindings
from specdecode.domain.decision import Decision
from specdecode.domain.drift import ProductionAcceptance
from specdecode.reconciler.load_sync import sync_load_pods
from specdecode.reconciler.mirror import steer_route_mirrors
from specdecode.reconciler.next_reconcile import WAKE_SLACK_SECONDS, next_reconcile_in
from specdecode.reconciler.observe import Snapshot
from specdecode.reconciler.promotion_patch import write_promotion
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.splitter import sync_splitter
from specdecode.reconciler.stage_load import with_stage_load
from specdecode.reconciler.status_boundary import status_of

__all__ = [
    "WAKE_SLACK_SECONDS",
    "RolloutRef",
    "apply_decision",
    "commit_status",
    "next_reconcile_in",
    "transition_origin",
]


async def apply_decision(runtime: Runtime, snapshot: Snapshot, decision: Decision) -> Decision:
    """Make the world match `decision`, its look's load put on its stage (`stage_load`);
    without a spec (unreadable, or not resolvable from its source) production is left as
    it is, and shadows, load pods and mirrors go. Returns the decision as written.

    A rollout with no status yet (`first`: its first reconcile) gets its children before its
    status: nothing it could act on can be stale, since no status was ever written from
    which a later decision could differ, and a new rollout's children need not wait for
    two writes. If the status write is refused, the next reconcile re-applies them from
    the fresh copy (a no-op where they match).
    """
    ref, spec, old = snapshot.ref, snapshot.spec, snapshot.stored
    decision = with_stage_load(decision)
    new = status_of(decision.status)  # the wire's, from here on: writes, metrics, Events
    source = snapshot.source
    found = Found()  # what the writes below find in their way: stored in status
    if snapshot.first:
        await apply_children_of(runtime, ref, spec, decision, source, found)
        version = await commit_status(runtime, ref, (old, new), decision)
        mark_guard_look(runtime, snapshot)
    else:
        version = await commit_status(runtime, ref, (old, new), decision)
        mark_guard_look(runtime, snapshot)  # before any child write that could raise
        await apply_children_of(runtime, ref, spec, decision, source, found)
    if spec is not None:
        await write_promotion(
            runtime, ref, spec, decision.status, source, snapshot.promotion_files, found
        )
    pods = observed_load_pods(runtime.cluster.rollout_pods(ref.namespace, ref.name, LOAD_ROLE))
    await sync_load_pods(runtime, ref.owner, spec, decision.traffic, pods, found)
    await sync_splitter(runtime, ref.owner, spec, decision.traffic, found)
    # Before the action annotation is consumed: that metadata write moves the version.
    await write_findings(runtime, ref, new, version, found)
    await steer_route_mirrors(runtime, ref.namespace, ref.name, snapshot.mirror, decision.traffic)
    if decision.clear_action and snapshot.action is not None:
        await asyncio.to_thread(
            clear_action, runtime.kube, ref.namespace, ref.name, snapshot.action
        )
    return decision


def mark_guard_look(runtime: Runtime, snapshot: Snapshot) -> None:
    """The drift guard's look this pass read is judged: its status is written (a refused
    write raised before this), so the next reconcile asks Prometheus nothing for it."""
    observed = snapshot.seen.observations
    looked = observed.production_acceptance if observed is not None else None
    if isinstance(looked, ProductionAcceptance):
        runtime.guard_reads.judged[snapshot.ref.key] = looked.look_at


async def commit_status(
    runtime: Runtime,
    ref: RolloutRef,
    statuses: tuple[SpecDecodeRolloutStatus, SpecDecodeRolloutStatus],
    decision: Decision,
) -> str:
    """Post the decision's Events, then write its status if it changed (guarded); the
    rollout's resourceVersion after it. `statuses`: the stored status and the decision's,
    both the wire's.

    Events first, so a transition whose status is written is announced even if the
    operator dies right after the write; a write refused as stale (`StaleRollout`) takes
    back the Events this attempt created (see the module docstring for every case).
    """
    old, new = statuses
    target = EventTarget(
        ref.namespace, ref.name, ref.uid, ref.resource_version, transition_origin(ref, old, new)
    )
    created = await _post_events(runtime, target, decision)
    version = ref.resource_version
    if new != old:
        try:
            version = await _write_status(runtime, ref, new, version, (version,))
        except StaleRollout:
            for position, reason in created:
                await asyncio.to_thread(withdraw_event, runtime.kube, target, reason, position)
            raise
    runtime.metrics.observe(ref.namespace, ref.name, old, new)
    return version


async def write_findings(
    runtime: Runtime,
    ref: RolloutRef,
    written: SpecDecodeRolloutStatus,
    version: str,
    found: Found,
) -> None:
    """Store what this apply found (`adapters.kube.findings`) where it differs from the
    status just written (`version`): guarded, no Event; the write wakes the loop, and the
    next decision shows the findings as Degraded."""
    findings: ApplyFindings | None = found.merged(written.apply_findings)
    if findings == written.apply_findings:
        return
    status = written.model_copy(update={"apply_findings": findings})
    await _write_status(runtime, ref, status, version, (ref.resource_version, version))


async def _post_events(
    runtime: Runtime, target: EventTarget, decision: Decision
) -> list[tuple[int, str]]:
    """(position, reason) of the Events this call created (not those that existed)."""
    created = []
    for position, event in enumerate(decision.events):
        if await asyncio.to_thread(
            post_event,
            runtime.kube,
            target,
            position,
            event.type.value,
            event.reason,
            event.message,
            runtime.settings.identity,
        ):
            created.append((position, event.reason))
    return created


async def _write_status(
    runtime: Runtime,
    ref: RolloutRef,
    new: SpecDecodeRolloutStatus,
    version: str,
    replaced: tuple[str, ...],
) -> str:
    """The status write guarded by `version`; marks the copies at `replaced` as superseded.
    The rollout's resourceVersion after it."""
    written = await asyncio.to_thread(
        patch_status, runtime.kube, ref.namespace, ref.name, new, version or None
    )
    # Until the watch delivers our write, the live copy (still at `version`) is stale.
    # A write the server found to be a no-op keeps the version: nothing to wait for.
    if version and written and written != version:
        runtime.write_echo.replaced(ref.key, replaced)
    return written or version


def transition_origin(
    ref: RolloutRef, old: SpecDecodeRolloutStatus, new: SpecDecodeRolloutStatus
) -> str:
    """What makes a transition this one and not another: the status it starts from.

    Events that leave the status as it is (an ignored action) also carry the object's
    resourceVersion: the same annotation set again later is a new request, not a repeat.
    """
    digest = hashlib.sha256(old.model_dump_json(by_alias=True).encode()).hexdigest()[:24]
    return digest if new != old else f"{digest}@{ref.resource_version}"


async def apply_children_of(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec | None,
    decision: Decision,
    source: Source | None,
    found: Found,
) -> None:
    """Apply the rendered children the cache shows absent or different; delete unwanted
    shadows the cache shows present. `spec` None (unreadable): production is left as it
    is, since it cannot be rendered, but the shadows still go. A `workloadRef` rollout
    (`source`) has only shadows, copies of the source, and none while it cannot be judged."""
    deployments = runtime.cluster.rollout_deployments(ref.namespace, ref.name)
    services = runtime.cluster.rollout_services(ref.namespace, ref.name)
    if spec is not None:
        if source is None:
            rendered = render_children(ref.name, ref.namespace, ref.uid, spec, decision.children)
        elif source.judged:
            rendered = render_adopted_shadows(
                ref.owner, spec, decision.children, source.observation, source.template
            )
        else:
            rendered = []
        observed = [*deployments, *services]
        stale = stale_objects(rendered, observed)
        manager = runtime.settings.field_manager
        foreign = await apply_children(runtime.kube, stale, manager, observed) if stale else []
        found.children(foreign)
    unjudged = source is not None and not source.judged  # no copy of what cannot be judged
    if not decision.children.shadows or unjudged:
        doomed = shadows_to_delete(ref.name, deployments, services, ref.uid)
        if doomed:
            await asyncio.to_thread(delete_children, runtime.kube, ref.namespace, doomed)
