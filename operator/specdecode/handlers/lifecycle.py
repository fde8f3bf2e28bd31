"""Operator start-up and shutdown: build the Runtime into kopf's memo, configure kopf.

kopf's own bookkeeping goes into `kopf.specdecode.io/*` annotations, not into `status`,
because the CRD's structural schema would prune an unknown `status.kopf` field. The prefix
is kopf's alone: kopf leaves every annotation under its storage prefix out of the changes
it reports, and under the old shared `specdecode.io/` prefix that hid the user's
`specdecode.io/action` annotation from kopf's change detection.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kopf

from specdecode.adapters.kube.client import Fence
from specdecode.adapters.telemetry import OperatorMetrics
from specdecode.handlers.watches import configure_watches
from specdecode.reconciler.engine_metrics import log_prometheus_reach
from specdecode.reconciler.runtime import Runtime
from specdecode.settings import OperatorSettings

KOPF_PREFIX = "kopf.specdecode.io"
KOPF_CONNECT_TIMEOUT = 5.0
NO_LOG_EVENTS = 100  # above CRITICAL: events are posted explicitly, one per transition


def configure_kopf(settings: kopf.OperatorSettings) -> None:
    """kopf's storage under its own prefix, and server-side selectors for the watches."""
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=KOPF_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=KOPF_PREFIX, key="last-handled-configuration"
    )
    configure_watches(settings)


def register_lifecycle_handlers(
    registry: kopf.OperatorRegistry,
    operator_settings: OperatorSettings,
    kubeconfig: str | None,
    metrics: OperatorMetrics,
    fence: Fence | None = None,
) -> None:
    """Register startup (clients, kopf settings) and cleanup (stop traffic) handlers.

    `metrics` is the process's registry, already served: a standby replica exposes it too.
    `fence`: closed by leadership when this replica must stop sending requests.
    """

    async def startup(memo: kopf.Memo, settings: kopf.OperatorSettings, **_: Any) -> None:
        configure_kopf(settings)
        settings.posting.level = NO_LOG_EVENTS
        settings.watching.server_timeout = 300
        # kopf's own requests (its finalizer and annotation writes) wait no longer than the
        # operator's: connect plus the request deadline (a client deadline only: kopf builds
        # its URLs, so the server's `timeout` cannot travel with them; see leadership). A
        # watch's stream is bounded by watching.server_timeout plus its client timeout.
        settings.networking.connect_timeout = operator_settings.api_connect_seconds
        settings.networking.request_timeout = (
            operator_settings.api_connect_seconds + operator_settings.api_request_seconds
        )
        settings.watching.connect_timeout = KOPF_CONNECT_TIMEOUT
        settings.watching.client_timeout = settings.watching.server_timeout + 30
        runtime = await asyncio.to_thread(
            Runtime.create, operator_settings, kubeconfig, metrics, fence
        )
        memo["runtime"] = runtime
        # One line on what Prometheus holds; in the background: start-up does not wait.
        memo["prometheus_reach"] = asyncio.create_task(log_prometheus_reach(runtime))

    async def cleanup(memo: kopf.Memo, **_: Any) -> None:
        reach: asyncio.Task[None] | None = memo.get("prometheus_reach")
        if reach is not None and not reach.done():
            reach.cancel()  # a Prometheus still not answering at shutdown: nothing to say
        runtime: Runtime | None = memo.get("runtime")
        if runtime is not None:
            await runtime.close()

    async def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        # kopf's own readers (no client library involved): the pod's service account,
        # else KUBECONFIG (the CLI exports --kubeconfig there).
        return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)

    kopf.on.login(registry=registry, id="login")(login)
    kopf.on.startup(registry=registry, id="runtime")(startup)
    kopf.on.cleanup(registry=registry, id="runtime")(cleanup)
