"""Applying a decision: the one path every decision takes, the invalid-spec one included.

Order matters for exactly-once effects across kills and stale copies:
1. the transition's Events, named by the status they were computed from (a repeat after a
   kill, or from a copy differing only in metadata, is refused as AlreadyExists);
2. the status, guarded by that same version (a stale copy gets 409 and nothing else runs);
3. children, route mirrors and the action annotation, each written only where the watched
   cache shows it differs, so an idle rollout sends no request at all.
Each step is idempotent; a reconcile stopped between two of them is completed by the next.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from specdecode.adapters.kube.children import (
    apply_children,
    delete_children,
    shadows_to_delete,
    stale_objects,
)
from specdecode.adapters.kube.events import EventTarget, post_event
from specdecode.adapters.kube.rollouts import clear_action, patch_status
from specdecode.adapters.render import Owner, render_children
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.status import Phase, SpecDecodeRolloutStatus
from specdecode.domain.decision import Decision
from specdecode.reconciler.mirror import observe_routes, steer_mirrors
from specdecode.reconciler.runtime import Runtime

# Phases in which time alone can change the decision (looks, warm-ups, deadlines): the
# loop wakes at the analysis clock. Elsewhere only a change can, and a watch event says so.
CLOCKED_PHASES = frozenset({Phase.PENDING, Phase.DEPLOYING, Phase.ANALYZING, Phase.PROMOTING})
# Wake this long after a timed event: the stage's comparisons are strict (`now >
# measure_from`), and the loop's timer and the wall clock differ by a few milliseconds.
WAKE_SLACK_SECONDS = 0.1


@dataclass(frozen=True)
class RolloutRef:
    """The identity of the object being reconciled, and the version it was read at."""

    namespace: str
    name: str
    uid: str
    generation: int
    resource_version: str = ""

    @property
    def key(self) -> str:
        """ "namespace/name", the key of per-rollout runtime state."""
        return f"{self.namespace}/{self.name}"

    @property
    def owner(self) -> Owner:
        """The owner of the rollout's children and load pods."""
        return Owner(self.name, self.namespace, self.uid)


def next_reconcile_in(runtime: Runtime, decision: Decision) -> float:
    """Seconds until the rollout must be looked at again without any event.

    While time drives the phase: the decision's next timed event when it has one (an
    analysis: its next look, warm-up or duration end, `cadence.next_timed_event`), else
    the operator's clock (`reconcile_interval_seconds`). The slow resync otherwise, which
    only repairs what a missed watch event could have hidden.
    """
    settings = runtime.settings
    if decision.status.phase not in CLOCKED_PHASES:
        return settings.resync_seconds
    if decision.wake_at is None:
        return settings.reconcile_interval_seconds
    until = (decision.wake_at - runtime.clock.now()).total_seconds()
    return min(max(until, 0.0) + WAKE_SLACK_SECONDS, settings.resync_seconds)


async def commit_status(
    runtime: Runtime, ref: RolloutRef, old: SpecDecodeRolloutStatus, decision: Decision
) -> None:
    """Write the decision's status if it changed (guarded), then post its Events.

    Status first: a decision computed from a stale copy is refused by the guarded write
    (409, `StaleRollout`) before any of its Events exists, so a transition decided twice
    (a hand-over, a restart, a watch lagging our own write) is announced once. The cost is
    at-most-once: a crash between the write and the post loses that Event, never doubles it.
    """
    new = decision.status
    target = EventTarget(
        ref.namespace, ref.name, ref.uid, ref.resource_version, transition_origin(ref, old, new)
    )
    if new != old:
        version = ref.resource_version or None
        written = await asyncio.to_thread(
            patch_status, runtime.kube, ref.namespace, ref.name, new, version
        )
        # Until the watch delivers our write, the live copy (still at `version`) is stale.
        # A write the server found to be a no-op keeps the version: nothing to wait for.
        if version and written and written != version:
            runtime.superseded[ref.key] = version
    for position, event in enumerate(decision.events):
        await asyncio.to_thread(
            post_event,
            runtime.kube,
            target,
            position,
            event.type.value,
            event.reason,
            event.message,
            runtime.settings.identity,
        )
    runtime.metrics.observe(ref.namespace, ref.name, old, new)


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
    runtime: Runtime, ref: RolloutRef, spec: SpecDecodeRolloutSpec | None, decision: Decision
) -> None:
    """Apply the rendered children the cache shows absent or different; delete unwanted
    shadows the cache shows present. `spec` None (unreadable): production is left as it
    is, since it cannot be rendered, but the shadows still go."""
    deployments = runtime.cluster.rollout_deployments(ref.namespace, ref.name)
    services = runtime.cluster.rollout_services(ref.namespace, ref.name)
    if spec is not None:
        rendered = render_children(ref.name, ref.namespace, ref.uid, spec, decision.children)
        stale = stale_objects(rendered, [*deployments, *services])
        if stale:
            manager = runtime.settings.field_manager
            await asyncio.to_thread(apply_children, runtime.kube, stale, manager)
    if not decision.children.shadows:
        doomed = shadows_to_delete(ref.name, deployments, services)
        if doomed:
            await asyncio.to_thread(delete_children, runtime.kube, ref.namespace, doomed)


async def apply_mirrors_and_action(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec | None,
    decision: Decision,
    action: str | None,
) -> None:
    """Route mirrors as the decision wants them; remove the action annotation if used."""
    routes = await observe_routes(runtime, ref.namespace, spec)
    await steer_mirrors(runtime, ref.namespace, ref.name, spec, decision.traffic, routes)
    if decision.clear_action and action is not None:
        await asyncio.to_thread(clear_action, runtime.kube, ref.namespace, ref.name, action)
