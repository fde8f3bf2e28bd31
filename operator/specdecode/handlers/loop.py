"""The reconcile loop every watched kind shares: reconcile, then sleep until woken or due.

Why one loop: rollouts and tunings differ only in what one pass does. A kopf daemon per
object reconciles, then waits for a watch event (`Wakeups`) or the delay the pass asked
for. It lets a new object's first, pre-finalizer copy go once (its status write would be
refused) and forgets the object's state when kopf stops its daemon for a deletion.
More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, cast

import kopf

from specdecode.handlers.lifecycle import KOPF_PREFIX
from specdecode.reconciler.runtime import Runtime

# kopf's default finalizer (`settings.persistence.finalizer`, left as it is: renaming it
# would strand the old one on every existing object, which would then never go).
KOPF_FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
KOPF_DIFFBASE = f"{KOPF_PREFIX}/last-handled-configuration"
# If kopf's write never arrives (refused by a webhook, say), reconcile this much later.
KOPF_WRITE_WAIT_SECONDS = 5.0


def register_loop(
    registry: kopf.OperatorRegistry,
    resource: tuple[str, str, str],
    loop: Callable[..., Awaitable[None]],
    wake: Callable[..., Awaitable[None]],
    *,
    loop_id: str,
    wake_id: str,
) -> None:
    """Register a kind's reconcile loop (a kopf daemon per object) and the watch handler
    that wakes it: every kind stops its loop alike (on stop the loop finishes its reconcile
    and exits; after 20 s it is cancelled)."""
    kopf.daemon(
        *resource,
        registry=registry,
        id=loop_id,
        cancellation_backoff=20.0,
        cancellation_timeout=5.0,
    )(loop)
    kopf.on.event(*resource, registry=registry, id=wake_id)(wake)


def awaits_kopf(body: kopf.Body, tracked: bool = False) -> bool:
    """Whether kopf is about to write this copy of a new object: its finalizer is missing
    or, if `tracked` (an `on.delete` handler matches it), its change-tracking annotation."""
    meta = body.metadata
    if meta.get("deletionTimestamp"):
        return False
    if KOPF_FINALIZER not in (meta.get("finalizers") or []):
        return True
    return tracked and KOPF_DIFFBASE not in (meta.get("annotations") or {})


def resource_deleted(stopped: kopf.DaemonStopped) -> bool:
    """Whether kopf stopped the daemon because its object is being deleted."""
    reason = stopped.reason
    return reason is not None and kopf.DaemonStoppingReason.RESOURCE_DELETED in reason


async def reconcile_loop(
    runtime: Runtime,
    key: str,
    stopped: kopf.DaemonStopped,
    reconcile_once: Callable[[], Awaitable[float]],
    kopf_pending: Callable[[], bool] = lambda: False,
    forget: Callable[[], None] = lambda: None,
) -> None:
    """Run `reconcile_once` (which returns seconds until the next pass is due) until
    `stopped`; the key's wake-ups (and wake-ups routed to it) live as long as the loop.

    `kopf_pending`: whether the current copy is one kopf is about to write (`awaits_kopf`);
    such a copy is skipped once (counted in the metric `copies_let_go`). `forget`: drops
    the object's in-memory state, called if the loop stopped because the object is being
    deleted.
    """
    runtime.wakeups.register(key)
    # kopf hands async daemons an awaitable stop flag (its type stubs name the base class).
    stop = asyncio.ensure_future(cast(Awaitable[Any], stopped.wait()))
    delay: float = 0.0
    skipped = False
    try:
        while not stopped:
            woken = asyncio.ensure_future(runtime.wakeups.wait(key, delay))
            await asyncio.wait({woken, stop}, return_when=asyncio.FIRST_COMPLETED)
            if stopped:
                woken.cancel()
                break
            if not skipped and kopf_pending():
                skipped, delay = True, KOPF_WRITE_WAIT_SECONDS
                runtime.metrics.copy_let_go()
                continue
            delay = await reconcile_once()
    finally:
        stop.cancel()
        runtime.wakeups.unfollow(key)
        runtime.wakeups.unregister(key)
        if resource_deleted(stopped):
            forget()
