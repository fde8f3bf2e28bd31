"""Running kopf only while this replica holds the Lease (two replicas, one working).

Why: a standby runs no kopf at all (no watches, no writes), so two replicas never both act.
On SIGTERM the leader stops gracefully and releases the Lease; analyses keep running in
their own pods. Once no renewal has succeeded by `fence_at` (before a standby may take the
Lease), the leader closes its clients' `Fence`, cancels kopf and exits non-zero, so no
request of a deposed leader lands late. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar
from urllib.parse import urlparse

from aiohttp import web
from kubernetes import client

from specdecode.adapters.kube.client import Deadlines, Fence, KubeClients
from specdecode.adapters.kube.lease import LeaseElector, LeaseTerms
from specdecode.settings import OperatorSettings

logger = logging.getLogger("specdecode.leadership")
# The Lease's requests have a thread of their own: a renewal must not queue behind a burst
# of reconciles in the default pool.
LEASE_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lease")
T = TypeVar("T")
RunOperator = Callable[[asyncio.Event], Awaitable[None]]
LeadingHook = Callable[[bool], None]
# How long a fenced kopf may take to unwind after its cancellation before the process
# exits anyway (nothing it does can reach the API server: the fence is closed).
UNWIND_SECONDS = 10.0


def elector_for(settings: OperatorSettings, kubeconfig: str | None) -> LeaseElector:
    """The Lease elector for this replica, on its own client."""
    terms = LeaseTerms(
        namespace=settings.lease_namespace,
        name=settings.lease_name,
        identity=settings.identity,
        duration_seconds=settings.lease_duration_seconds,
    )
    # A Lease request never outlives one renewal period.
    renew = settings.lease_renew_seconds
    deadlines = Deadlines(connect=min(5.0, renew), read=renew)
    api = KubeClients.connect(kubeconfig, deadlines=deadlines).api
    return LeaseElector(client.CoordinationV1Api(api), terms)


def fence_at(settings: OperatorSettings, renewal_sent: float) -> float:
    """When a leader whose last successful renewal was sent at `renewal_sent` (monotonic
    seconds) must have stopped: a renewal period before any standby may take over."""
    return renewal_sent + settings.lease_duration_seconds - settings.lease_renew_seconds


async def run_when_leading(
    settings: OperatorSettings,
    elector: LeaseElector,
    run_operator: RunOperator,
    liveness_endpoint: str | None,
    on_leading: LeadingHook = lambda leading: None,
    fence: Fence | None = None,
) -> int:
    """Wait for the Lease, run the operator while holding it, release it on the way out.

    `on_leading` is told when this replica starts and stops leading (a metric); `fence`
    is the one the operator's API clients pass (closed if leadership is not renewed in
    time). Returns the process's exit code: 1 if leadership was lost (restart as a standby).
    """
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stopping.set)
    acquired_sent = await _wait_for_lease(settings, elector, stopping, liveness_endpoint)
    if acquired_sent is None:
        return 0
    logger.info("%s holds Lease %s: reconciling", settings.identity, settings.lease_name)
    fence = fence or Fence()
    stop_flag = asyncio.Event()
    renewer = asyncio.create_task(_keep_leading(settings, elector, fence, acquired_sent))
    operator = asyncio.ensure_future(run_operator(stop_flag))
    on_leading(True)
    try:
        await asyncio.wait({operator, renewer}, return_when=asyncio.FIRST_COMPLETED)
        if renewer.done():  # fenced: stop every reconcile now, not after a graceful stop
            on_leading(False)
            stop_flag.set()
            operator.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(operator, UNWIND_SECONDS)
        else:
            operator.result()
    finally:
        renewer.cancel()
        if not fence.closed:  # a fenced leader has nothing to release (nor a free thread)
            on_leading(False)
            refused = await _on_lease_thread(elector.release)
            if refused:
                logger.warning(
                    "%s could not release Lease %s (%s): a standby takes it when it expires",
                    settings.identity,
                    settings.lease_name,
                    refused,
                )
            else:
                logger.info("%s released Lease %s", settings.identity, settings.lease_name)
    return 1 if fence.closed else 0


async def _wait_for_lease(
    settings: OperatorSettings,
    elector: LeaseElector,
    stopping: asyncio.Event,
    liveness_endpoint: str | None,
) -> float | None:
    """Poll until the Lease is ours: when the request that won it was sent (monotonic
    seconds); None if the process is told to stop first."""
    health = await _serve_standby_health(liveness_endpoint)
    loop = asyncio.get_running_loop()
    try:
        while not stopping.is_set():
            sent = loop.time()
            try:
                if await _on_lease_thread(elector.try_acquire_or_renew):
                    return sent
            except Exception as error:
                logger.warning("cannot read Lease %s: %s", settings.lease_name, error)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), settings.lease_retry_seconds)
        return None
    finally:
        if health is not None:
            await health.cleanup()


async def _keep_leading(
    settings: OperatorSettings, elector: LeaseElector, fence: Fence, renewal_sent: float
) -> None:
    """Renew every `lease_renew_seconds`; return, with `fence` closed, once leadership is
    lost or no renewal succeeded in time (`fence_at`)."""
    loop = asyncio.get_running_loop()
    while True:
        deadline = fence_at(settings, renewal_sent)
        await asyncio.sleep(max(0.0, min(settings.lease_renew_seconds, deadline - loop.time())))
        sent = loop.time()
        if sent >= deadline:
            logger.error("Lease %s not renewed in time: fenced", settings.lease_name)
            break
        try:
            renew = _on_lease_thread(elector.try_acquire_or_renew)
            if await asyncio.wait_for(renew, deadline - sent):
                renewal_sent = sent
                continue
            logger.error("Lease %s was taken over: fenced", settings.lease_name)
            break
        except TimeoutError:
            logger.error("Lease %s: no answer before the fence: fenced", settings.lease_name)
            break
        except Exception as error:
            logger.warning("cannot renew Lease %s: %s", settings.lease_name, error)
    fence.close()  # first: nothing leaves the process from now on
    elector.abandon()  # not ours any more: never release it


async def _on_lease_thread(call: Callable[[], T]) -> T:
    """Run a blocking Lease request on the Lease's own thread."""
    return await asyncio.get_running_loop().run_in_executor(LEASE_THREAD, call)


async def _serve_standby_health(endpoint: str | None) -> web.AppRunner | None:
    """Answer the liveness probe while standing by (kopf serves it once leading)."""
    if not endpoint:
        return None
    url = urlparse(endpoint)

    async def healthy(_: web.Request) -> web.Response:
        return web.Response(text="standby")

    app = web.Application()
    app.router.add_get(url.path or "/", healthy)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, url.hostname, url.port or 80).start()
    return runner
