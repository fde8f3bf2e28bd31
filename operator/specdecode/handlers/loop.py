"""The reconcile loop every watched kind shares: reconcile, then sleep until woken or due.

A kopf daemon per object runs `reconcile_loop`: it reconciles at once, then waits until a
watch event wakes its key (`Wakeups`) or the delay the last reconcile asked for has passed,
and stops when kopf stops the daemon (deletion or shutdown), after the reconcile in
progress has finished. Rollouts and tunings differ only in what one pass does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, cast

import kopf

from specdecode.reconciler.runtime import Runtime


async def reconcile_loop(
    runtime: Runtime,
    key: str,
    stopped: kopf.DaemonStopped,
    reconcile_once: Callable[[], Awaitable[float]],
) -> None:
    """Run `reconcile_once` (which returns seconds until the next pass is due) until
    `stopped`; the key's wake-ups (and wake-ups routed to it) live as long as the loop."""
    runtime.wakeups.register(key)
    # kopf hands async daemons an awaitable stop flag (its type stubs name the base class).
    stop = asyncio.ensure_future(cast(Awaitable[Any], stopped.wait()))
    delay: float = 0.0
    try:
        while not stopped:
            woken = asyncio.ensure_future(runtime.wakeups.wait(key, delay))
            await asyncio.wait({woken, stop}, return_when=asyncio.FIRST_COMPLETED)
            if stopped:
                woken.cancel()
                break
            delay = await reconcile_once()
    finally:
        stop.cancel()
        runtime.wakeups.unfollow(key)
        runtime.wakeups.unregister(key)
