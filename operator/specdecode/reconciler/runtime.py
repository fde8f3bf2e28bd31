"""The operator's long-lived collaborators, built once at start-up and kept in kopf's memo.

Nothing here is a module global: two operators in one process (as tests run them) get two
runtimes. Everything is a Protocol or a plain client, so tests can swap any part.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httpx

from specdecode.adapters.clock import Clock, SystemClock
from specdecode.adapters.engine_series import EngineSeriesMemory
from specdecode.adapters.engine_version import EngineVersions
from specdecode.adapters.kube.cache import ClusterView
from specdecode.adapters.kube.client import Fence, KubeClients
from specdecode.adapters.metrics import (
    AcceptanceBlocksSource,
    AcceptanceSource,
    EngineSeriesSource,
    NoAcceptanceBlocks,
    NoTailBlocks,
    PrometheusAcceptanceBlocks,
    PrometheusAccess,
    PrometheusEngineSeries,
    PrometheusRequestOutcomes,
    PrometheusRunningRequests,
    PrometheusTailBlocks,
    RequestOutcomeSource,
    RunningRequestsSource,
    StepLatencySource,
    TailBlocksSource,
    UnknownEngineSeries,
    UnknownRequestOutcomes,
    UnknownRunningRequests,
    make_metric_source,
)
from specdecode.adapters.process_caches import GuardReads, LoadPodCache, WriteEcho
from specdecode.adapters.telemetry import OperatorMetrics
from specdecode.reconciler.wakeups import Wakeups
from specdecode.settings import OperatorSettings


@dataclass
class Runtime:
    """Clients, caches and per-rollout locks of one operator process.

    No decision lives here: every value a decision reads is in the rollout's status or
    re-derived from the cluster; the caches (`adapters.process_caches`) only save requests.

    `http` carries the operator's own small requests: load-pod reports and endpoint
    updates, and one `GET /version` per engine pod. Never inference traffic: the shadow
    load runs in the load pods.
    """

    settings: OperatorSettings
    kube: KubeClients
    acceptance: AcceptanceSource
    step_latency: StepLatencySource
    http: httpx.AsyncClient
    metrics: OperatorMetrics = field(default_factory=OperatorMetrics)
    clock: Clock = field(default_factory=SystemClock)
    running: RunningRequestsSource = field(default_factory=UnknownRunningRequests)
    request_outcomes: RequestOutcomeSource = field(default_factory=UnknownRequestOutcomes)
    """Both shadow engines' finished requests by reason (Mirror's ErrorRate evidence)."""
    acceptance_blocks: AcceptanceBlocksSource = field(default_factory=NoAcceptanceBlocks)
    """Production's acceptance counters per time block, for the drift guard (none by default)."""
    tail_blocks: TailBlocksSource = field(default_factory=NoTailBlocks)
    """Production's step-ITL histogram per time block, for the guard's latency half."""
    """Production's running-request histogram for a tuning's report (unknown by default)."""
    cluster: ClusterView = field(default_factory=ClusterView)
    """The watched children, pods and routes (kopf's indexes, attached by the handlers)."""
    wakeups: Wakeups = field(default_factory=Wakeups)
    write_echo: WriteEcho = field(default_factory=WriteEcho)
    """Our own writes the watch has not echoed yet (`adapters.process_caches`)."""
    load_cache: LoadPodCache = field(default_factory=LoadPodCache)
    """The load token and the endpoints each load pod uses (`adapters.process_caches`)."""
    guard_reads: GuardReads = field(default_factory=GuardReads)
    """The drift guard's latest look read (`adapters.process_caches`)."""
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # The vLLM release each ready engine pod reported on GET /version, asked once per pod:
    # the one request the operator sends an engine (reconciler/engine_version.py).
    engine_versions: EngineVersions = field(default_factory=EngineVersions)
    # Whether Prometheus holds series of the engine pods at all (the scrape check,
    # reconciler/engine_metrics.py), and per rollout what it last answered.
    engine_series: EngineSeriesSource = field(default_factory=UnknownEngineSeries)
    engine_series_memory: EngineSeriesMemory = field(default_factory=EngineSeriesMemory)

    @classmethod
    def create(
        cls,
        settings: OperatorSettings,
        kubeconfig: str | None = None,
        metrics: OperatorMetrics | None = None,
        fence: Fence | None = None,
    ) -> Runtime:
        """Connect to the API server and Prometheus as the settings say.

        `metrics`: the process's registry, if it is already served (it outlives kopf);
        `fence`: closed by leadership when this replica must stop sending requests.
        """
        access = PrometheusAccess(
            ca_file=settings.prometheus_ca_file,
            bearer_token_file=settings.prometheus_bearer_token_file,
            insecure_skip_verify=settings.prometheus_insecure_skip_verify,
        )
        prometheus = make_metric_source(
            "prometheus", settings.prometheus_url, settings.prometheus_timeout_seconds, access
        )
        metrics = metrics or OperatorMetrics()
        kube = KubeClients.connect(
            kubeconfig,
            on_request=metrics.count_request,
            deadlines=settings.api_deadlines(),
            fence=fence,
        )
        return cls(
            settings=settings,
            kube=kube,
            metrics=metrics,
            acceptance=prometheus,
            step_latency=prometheus,
            acceptance_blocks=PrometheusAcceptanceBlocks(
                settings.prometheus_url, settings.prometheus_timeout_seconds, access
            ),
            tail_blocks=PrometheusTailBlocks(
                settings.prometheus_url, settings.prometheus_timeout_seconds, access
            ),
            request_outcomes=PrometheusRequestOutcomes(
                settings.prometheus_url, settings.prometheus_timeout_seconds, access
            ),
            running=PrometheusRunningRequests(
                settings.prometheus_url, settings.prometheus_timeout_seconds, access
            ),
            engine_series=PrometheusEngineSeries(
                settings.prometheus_url, settings.prometheus_timeout_seconds, access
            ),
            http=httpx.AsyncClient(
                timeout=httpx.Timeout(10.0, connect=3.0),
                event_hooks={"request": [kube.fence.refuse_http]},
            ),
        )

    def lock(self, key: str) -> asyncio.Lock:
        """One reconcile at a time per rollout (timer and change handlers may overlap)."""
        return self._locks.setdefault(key, asyncio.Lock())

    def forget(self, namespace: str, name: str) -> None:
        """Drop a deleted rollout's lock and metric series."""
        key = f"{namespace}/{name}"
        self._locks.pop(key, None)
        self.write_echo.forget(key)
        self.load_cache.forget(key)
        self.guard_reads.forget(key)
        self.wakeups.unregister(key)
        self.engine_versions.forget(key)
        self.engine_series_memory.forget(key)
        self.metrics.forget(namespace, name)

    async def close(self) -> None:
        """Close connections (operator shutdown). Load pods keep measuring meanwhile."""
        await self.http.aclose()
