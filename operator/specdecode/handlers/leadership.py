"""Running kopf only while this replica holds the Lease (two replicas, one working).

A standby replica runs no kopf at all: no watches, no finalizers, no writes. It answers
its liveness probe and polls the Lease. The leader runs `kopf.operator` and renews the
Lease in the background. On SIGTERM (an upgrade, a node drain) kopf stops gracefully: each
rollout's loop finishes its reconcile, then the Lease is released and the standby takes
over within one poll. Analyses keep running meanwhile: the shadow load runs in its own
pods and status holds everything else, so the new leader continues where the old one
stopped. A leader that cannot renew for a whole lease duration, or finds the Lease taken,
stops reconciling at once and exits non-zero (the kubelet restarts it as a standby).
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

from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.kube.lease import LeaseElector, LeaseTerms
from specdecode.settings import OperatorSettings

logger = logging.getLogger("specdecode.leadership")
# The Lease's requests have a thread of their own: a renewal must not queue behind a burst
# of reconciles in the default pool.
LEASE_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lease")
T = TypeVar("T")
RunOperator = Callable[[asyncio.Event], Awaitable[None]]
LeadingHook = Callable[[bool], None]


def elector_for(settings: OperatorSettings, kubeconfig: str | None) -> LeaseElector:
    """The Lease elector for this replica, on its own client."""
    terms = LeaseTerms(
        namespace=settings.lease_namespace,
        name=settings.lease_name,
        identity=settings.identity,
        duration_seconds=settings.lease_duration_seconds,
    )
    return LeaseElector(client.CoordinationV1Api(KubeClients.connect(kubeconfig).api), terms)


async def run_when_leading(
    settings: OperatorSettings,
    elector: LeaseElector,
    run_operator: RunOperator,
    liveness_endpoint: str | None,
    on_leading: LeadingHook = lambda leading: None,
) -> int:
    """Wait for the Lease, run the operator while holding it, release it on the way out.

    `on_leading` is told when this replica starts and stops leading (a metric). Returns
    the process's exit code: 1 if leadership was lost (restart as a standby).
    """
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stopping.set)
    if not await _wait_for_lease(settings, elector, stopping, liveness_endpoint):
        return 0
    logger.info("%s holds Lease %s: reconciling", settings.identity, settings.lease_name)
    stop_flag = asyncio.Event()
    renewer = asyncio.create_task(_keep_leading(settings, elector, stop_flag))
    on_leading(True)
    try:
        await run_operator(stop_flag)
    finally:
        on_leading(False)
        renewer.cancel()
        lost = stop_flag.is_set() and not elector.leading
        await _on_lease_thread(elector.release)
        logger.info("%s released Lease %s", settings.identity, settings.lease_name)
    return 1 if lost else 0


async def _wait_for_lease(
    settings: OperatorSettings,
    elector: LeaseElector,
    stopping: asyncio.Event,
    liveness_endpoint: str | None,
) -> bool:
    """Poll until the Lease is ours (True) or the process is told to stop (False)."""
    health = await _serve_standby_health(liveness_endpoint)
    try:
        while not stopping.is_set():
            try:
                if await _on_lease_thread(elector.try_acquire_or_renew):
                    return True
            except Exception as error:
                logger.warning("cannot read Lease %s: %s", settings.lease_name, error)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), settings.lease_retry_seconds)
        return False
    finally:
        if health is not None:
            await health.cleanup()


async def _keep_leading(
    settings: OperatorSettings, elector: LeaseElector, stop_flag: asyncio.Event
) -> None:
    """Renew every `lease_renew_seconds`; stop the operator if leadership is lost."""
    loop = asyncio.get_running_loop()
    confirmed = loop.time()
    while True:
        await asyncio.sleep(settings.lease_renew_seconds)
        try:
            if await _on_lease_thread(elector.try_acquire_or_renew):
                confirmed = loop.time()
                continue
            logger.error("Lease %s was taken over: stopping", settings.lease_name)
        except Exception as error:
            if loop.time() - confirmed < settings.lease_duration_seconds:
                logger.warning("cannot renew Lease %s: %s", settings.lease_name, error)
                continue
            logger.error("Lease %s not renewed for a whole duration: stopping", error)
        elector.abandon()  # not ours any more: never release it
        stop_flag.set()
        return


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
