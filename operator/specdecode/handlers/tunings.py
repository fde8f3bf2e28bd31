"""kopf handlers for SpecDecodeTuning: one loop per tuning, woken by events and looks.

Like a rollout's: a kopf daemon reconciles, then sleeps until a watch event wakes it (the
tuning changed; one of its trials' engines or load pods did: trial keys follow the tuning,
`Wakeups.follow`) or its next look falls due. A finished tuning sleeps until it changes.
Deleting a tuning deletes its trials, report and blocks by owner reference.
"""

from __future__ import annotations

from typing import Any

import kopf
from kubernetes.client import ApiException

from specdecode.api import GROUP, VERSION
from specdecode.api.tuning import PLURAL
from specdecode.handlers.loop import awaits_kopf, reconcile_loop, register_loop
from specdecode.handlers.rollouts import RETRY_DELAY_SECONDS, runtime_of
from specdecode.handlers.watches import attach_cluster
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.tuning import TuningRef, reconcile_tuning

RESOURCE = (GROUP, VERSION, PLURAL)


def ref_of(body: kopf.Body) -> TuningRef:
    """The tuning's identity at the generation kopf's copy has."""
    meta = body.metadata
    return TuningRef(
        namespace=str(meta.namespace),
        name=str(meta.name),
        uid=str(meta.uid),
        generation=int(meta.get("generation") or 0),
    )


async def reconcile_once(runtime: Runtime, body: kopf.Body, logger: kopf.Logger) -> float | None:
    """One reconcile under the tuning's lock; seconds until the next is due (None: events)."""
    ref = ref_of(body)
    spec, status = dict(body.spec), dict(body.get("status") or {})
    try:
        async with runtime.lock(ref.key):
            return await reconcile_tuning(runtime, ref, spec, status)
    except ApiException as error:
        logger.warning("API server said %s %s; retrying", error.status, error.reason)
    except Exception:
        logger.exception("tuning reconcile failed; retrying in %.0f s", RETRY_DELAY_SECONDS)
    return RETRY_DELAY_SECONDS


async def tuning_loop(
    body: kopf.Body,
    memo: kopf.Memo,
    logger: kopf.Logger,
    stopped: kopf.DaemonStopped,
    **kwargs: Any,
) -> None:
    """The tuning's reconcile loop (a kopf daemon, stopped on deletion or shutdown)."""
    runtime = runtime_of(memo)
    attach_cluster(runtime, kwargs)

    async def once() -> float:
        delay = await reconcile_once(runtime, body, logger)
        return runtime.settings.resync_seconds if delay is None else delay

    ref = ref_of(body)
    await reconcile_loop(
        runtime,
        ref.key,
        stopped,
        once,
        kopf_pending=lambda: awaits_kopf(body),
        forget=lambda: forget_tuning(runtime, ref.namespace, ref.name),
    )


async def tuning_event(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Any change of a tuning: wake its loop."""
    runtime_of(memo).wakeups.wake(ref_of(body).key)


def forget_tuning(runtime: Runtime, namespace: str, name: str) -> None:
    """Drop a deleted tuning's metric series and memory (owner references delete what it
    created)."""
    runtime.metrics.tuning_forgotten(namespace, name)
    runtime.write_echo.finished_tunings.pop(f"{namespace}/{name}", None)


def register_tuning_handlers(registry: kopf.OperatorRegistry) -> None:
    """Register the tuning's loop and its wake-up."""
    register_loop(
        registry, RESOURCE, tuning_loop, tuning_event, loop_id="tune", wake_id="wake-tuning"
    )
