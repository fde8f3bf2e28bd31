"""kopf handlers for SpecDecodeRollout: one reconcile loop per rollout, woken by events.

Why: a change of the rollout (so `specdecode.io/action` acts at once), its children, pods
or a namespace's HTTPRoute wakes the loop (`watches`); otherwise it is due at the analysis
clock while time drives the phase, else at the slow resync. Errors never end the loop: an
API error or a stale copy is logged and tried again later. More: docs/internals.md.
"""

from __future__ import annotations

import time
from typing import Any

import kopf
from kubernetes.client import ApiException

from specdecode.api import GROUP, PLURAL, VERSION, TrafficSourceType
from specdecode.handlers.loop import awaits_kopf, reconcile_loop, register_loop
from specdecode.handlers.watches import attach_cluster
from specdecode.reconciler.mirror import observe_routes, steer_mirrors
from specdecode.reconciler.reconcile import (
    RolloutRead,
    RolloutRef,
    StaleRollout,
    next_reconcile_in,
    reconcile,
)
from specdecode.reconciler.runtime import Runtime

RESOURCE = (GROUP, VERSION, PLURAL)
RETRY_DELAY_SECONDS = 5.0


def runtime_of(memo: kopf.Memo) -> Runtime:
    """The Runtime the startup handler put into kopf's memo."""
    runtime: Runtime = memo["runtime"]
    return runtime


def key_of(body: kopf.Body) -> str:
    """ "namespace/name" of a rollout."""
    return f"{body.metadata.namespace}/{body.metadata.name}"


async def reconcile_once(runtime: Runtime, body: kopf.Body, logger: kopf.Logger) -> float:
    """One reconcile under the rollout's lock; seconds until the next one is due.

    Spec, status, annotations and resourceVersion are read together before anything is
    awaited, so they are one consistent version of the object.
    """
    meta = body.metadata
    ref = RolloutRef(
        namespace=str(meta.namespace),
        name=str(meta.name),
        uid=str(meta.uid),
        generation=int(meta.get("generation") or 0),
        resource_version=str(meta.get("resourceVersion") or ""),
    )
    rollout = RolloutRead(
        ref, dict(body.spec), dict(body.get("status") or {}), dict(meta.annotations)
    )
    started = time.monotonic()
    outcome = "ok"
    try:
        async with runtime.lock(ref.key):
            decision = await reconcile(runtime, rollout)
    except StaleRollout as stale:
        outcome = "stale"
        logger.debug("skipped: %s", stale)
        return runtime.settings.reconcile_interval_seconds
    except ApiException as error:
        outcome = "error"
        logger.warning("API server said %s %s; retrying", error.status, error.reason)
        return RETRY_DELAY_SECONDS
    except Exception:
        outcome = "error"
        logger.exception("reconcile failed; retrying in %.0f s", RETRY_DELAY_SECONDS)
        return RETRY_DELAY_SECONDS
    finally:
        runtime.metrics.reconciled(outcome, time.monotonic() - started)
    for event in decision.events:
        logger.info("%s: %s", event.reason, event.message)
    return next_reconcile_in(runtime, decision, ref.key)


async def rollout_loop(
    body: kopf.Body,
    memo: kopf.Memo,
    logger: kopf.Logger,
    stopped: kopf.DaemonStopped,
    **kwargs: Any,
) -> None:
    """The rollout's reconcile loop (a kopf daemon: started per rollout, stopped on
    deletion or shutdown, after the reconcile in progress has finished)."""
    runtime = runtime_of(memo)
    attach_cluster(runtime, kwargs)
    namespace, name = str(body.metadata.namespace), str(body.metadata.name)
    await reconcile_loop(
        runtime,
        key_of(body),
        stopped,
        lambda: reconcile_once(runtime, body, logger),
        # Mirror rollouts have an `on.delete` handler: kopf also writes its annotation.
        kopf_pending=lambda: awaits_kopf(body, tracked=mirrors_a_route(body.spec)),
        # Owner references delete its children and load pods; the process forgets it.
        forget=lambda: runtime.forget(namespace, name),
    )


async def rollout_event(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Any change of a rollout (spec, status, annotations): wake its loop."""
    runtime_of(memo).wakeups.wake(key_of(body))


def mirrors_a_route(spec: kopf.Spec, **_: Any) -> bool:
    """Whether the rollout uses Mirror traffic (it then holds a finalizer)."""
    traffic = spec.get("analysis", {}).get("traffic", {})
    return bool(traffic.get("source") == TrafficSourceType.MIRROR.value)


async def rollout_unmirrored(body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
    """Remove the rollout's RequestMirror filters from every route of its namespace."""
    namespace, name = str(body.metadata.namespace), str(body.metadata.name)
    runtime = runtime_of(memo)
    attach_cluster(runtime, kwargs)
    try:
        routes = await observe_routes(runtime, namespace, None)
        await steer_mirrors(runtime, namespace, name, None, None, routes)
    except ApiException as error:
        raise kopf.TemporaryError(
            f"API server said {error.status} {error.reason}", delay=RETRY_DELAY_SECONDS
        ) from error


def register_rollout_handlers(registry: kopf.OperatorRegistry) -> None:
    """Register the rollout's loop, its wake-up, and the Mirror rollouts' route clean-up."""
    register_loop(
        registry, RESOURCE, rollout_loop, rollout_event, loop_id="reconcile", wake_id="wake"
    )
    # Mirror rollouts edit a route they do not own: a deletion handler, not optional, so
    # the finalizer stays until the filters are gone. (Every rollout carries kopf's
    # finalizer anyway: kopf adds it for the daemon, to stop it before the object goes.)
    kopf.on.delete(*RESOURCE, registry=registry, when=mirrors_a_route, id="unmirror")(
        rollout_unmirrored
    )
