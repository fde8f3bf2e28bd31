"""Applying a decision: the one path every decision takes, the invalid-spec one included.

Order, for exactly one Event per transition and no other effect of a stale copy:
1. the transition's Events, named by the status it starts from (`adapters.kube.events`);
2. the status, guarded by the resourceVersion it was computed from: the commit point.
   Refused (409): the Events this attempt created are withdrawn, nothing else runs;
3. children, route mirrors and the action annotation, each written only where the watched
   cache shows it differs, so an idle rollout sends no request at all.
Each step is idempotent; a reconcile stopped between two of them is completed by the next.
One exception to the order: a rollout's first reconcile (no status stored yet) applies its
children before step 1 (`reconcile._apply`), so a new rollout's Deployments do not wait
for two writes. No earlier status exists for them to contradict; the one stale case is a
spec edited while that first reconcile runs: its children are rendered from the older spec,
its status write is refused (409), and the next reconcile re-renders them from the new one.

Why Events before the status, case by case:
- A copy older than our own write: `runtime.write_echo` refuses it in `reconcile` before
  anything is sent.
- Killed (or a request failed) after the Events, before the write: nothing is committed.
  The next reconcile (after a restart: from kopf's fresh LIST) reads the same status,
  computes the transition again under the same names, is refused (AlreadyExists) and
  writes the status: one Event. (Status first lost that Event: at most once.)
- 409, the rollout changed only in metadata (kopf's annotations, the action annotation)
  or spec: this attempt's Events are withdrawn; the retry starts from the same status,
  so the same transition creates them again (one Event, seen coming, going and coming
  back by a watcher), and a different decision announces its own instead.
- 409, the status itself changed (a hand edit; a leader that lost its Lease finishing a
  request): this transition is never written from here; withdrawn, and the writer that
  won announced its own transition before writing it.
- A write failing otherwise (timeout, 5xx) may have landed: nothing is withdrawn. If it
  landed, a repeat from the old copy is refused twice (AlreadyExists, then 409).
- Leader hand-over: the standby watches nothing until it holds the Lease, then LISTs:
  as a restart. A transition the old leader posted but did not write is a kill's repeat.
What is left: a kill after the Events, before the write, whose repeat decides otherwise
(a gate look seeing newer samples), or between a 409 and the withdrawal, leaves an Event
of a transition never written; two writers deciding one transition at once (which the
Lease excludes) could withdraw the winner's. Each needs a kill inside one API request.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from specdecode.adapters.kube.children import (
    delete_children,
    shadows_to_delete,
    stale_objects,
)
from specdecode.adapters.kube.events import EventTarget, post_event, withdraw_event
from specdecode.adapters.kube.owned import apply_children
from specdecode.adapters.kube.rollouts import StaleRollout, clear_action, patch_status
from specdecode.adapters.render import Owner, render_children
from specdecode.adapters.render_adopted import render_adopted_shadows
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.status import Phase, SpecDecodeRolloutStatus
from specdecode.api.status_findings import ApplyFindings
from specdecode.domain.decision import Decision
from specdecode.reconciler.mirror import observe_routes, steer_mirrors
from specdecode.reconciler.ownership import Found, not_owned_found
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.workload import Source

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


def next_reconcile_in(runtime: Runtime, decision: Decision, key: str | None = None) -> float:
    """Seconds until the rollout must be looked at again without any event.

    The decision's next timed event when it has one (an analysis: its next look, warm-up
    or duration end; Promoted: the drift guard's next look; `cadence.next_timed_event`),
    else, while time drives the phase, the operator's clock (`reconcile_interval_seconds`).
    The slow resync otherwise, which only repairs what a missed watch event could have
    hidden. A rollout (`key`) with an object named like a child that it does not own: at
    least at the operator's clock (no watch event says when that object goes).
    The scrape check's next instant (`reconciler.engine_metrics`): at it, whatever the
    phase (no event marks a grace's end).
    """
    settings = runtime.settings
    if decision.wake_at is not None:  # an analysis' next look, or the drift guard's
        until = (decision.wake_at - runtime.clock.now()).total_seconds()
        wait = min(max(until, 0.0) + WAKE_SLACK_SECONDS, settings.resync_seconds)
    elif decision.status.phase in CLOCKED_PHASES:
        wait = settings.reconcile_interval_seconds
    else:
        wait = settings.resync_seconds
    if not_owned_found(decision.status):
        wait = min(wait, settings.reconcile_interval_seconds)
    check = runtime.engine_series_memory.next_check(key) if key is not None else None
    if check is not None:  # an engine's scrape grace ends, or a missing series is re-asked
        until = (check - runtime.clock.now()).total_seconds()
        wait = min(wait, max(until, 0.0) + WAKE_SLACK_SECONDS)
    return wait


async def commit_status(
    runtime: Runtime, ref: RolloutRef, old: SpecDecodeRolloutStatus, decision: Decision
) -> str:
    """Post the decision's Events, then write its status if it changed (guarded); the
    rollout's resourceVersion after it.

    Events first, so a transition whose status is written is announced even if the
    operator dies right after the write; a write refused as stale (`StaleRollout`) takes
    back the Events this attempt created (see the module docstring for every case).
    """
    new = decision.status
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
    """Store what this apply found (`reconciler.ownership`) where it differs from the
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
