"""The scrape check's read: does Prometheus hold series of the rollout's settled shadow
engines? None: Degraded (MetricsUnavailable), see `domain.engine_metrics`, judged in
`domain.pass_decision`; at most one query per reconcile,
none once the current pods were seen (`adapters.engine_series`). Also the one line the
operator logs at start-up about what its Prometheus holds."""

from __future__ import annotations

import logging
from datetime import timedelta

from specdecode.adapters.engine_series import shadow_engine_pods
from specdecode.adapters.kube.rollouts import RolloutRef
from specdecode.domain.engine_metrics import (
    CHART_VALUE,
    ENGINE_GAUGE,
    reads_engine_metrics,
    settled,
    settles_at,
)
from specdecode.domain.gates.registry import Need
from specdecode.domain.observations import MetricError
from specdecode.domain.pass_decision import EngineScrape
from specdecode.reconciler.runtime import Runtime

logger = logging.getLogger("specdecode.metrics")


async def observe_engine_scrape(
    runtime: Runtime, ref: RolloutRef, stage_needs: tuple[frozenset[Need], ...]
) -> EngineScrape | None:
    """What the scrape check judges (`domain.pass_decision`): the shadow engine pods and
    those Prometheus holds series of; None when nothing is to be checked now (no gate reads
    engine metrics, the check is off, or no engine pod has been Ready for the grace)."""
    memory = runtime.engine_series_memory
    seconds = runtime.settings.engine_scrape_grace_seconds
    if seconds <= 0 or not reads_engine_metrics(stage_needs):
        memory.forget(ref.key)
        return None
    grace, now = timedelta(seconds=seconds), runtime.clock.now()
    pods = shadow_engine_pods(runtime.cluster.rollout_pods(ref.namespace, ref.name))
    due = settled(pods, now, grace)
    if not due:
        memory.forget(ref.key)  # no settled engine: nothing asked, nothing to show
    memory.expect(ref.key, settles_at(pods, now, grace))
    if not due:
        return None
    scraped = await memory.scraped(runtime.engine_series, ref.key, ref.namespace, due, now)
    return EngineScrape(ref.namespace, tuple(pods), scraped, grace, now)


async def log_prometheus_reach(runtime: Runtime) -> None:
    """One line at start-up: what the operator's Prometheus holds of vLLM's engines (a
    warning if it does not answer). Rollouts say more, per rollout, once engines run."""
    source = runtime.engine_series
    count = await source.engine_series_count()
    if isinstance(count, MetricError):
        logger.warning(
            "Prometheus at %s does not answer (%s): gates that read vLLM's counters will "
            "report Error until it does",
            source.url,
            count.message,
        )
        return
    logger.info(
        "Prometheus at %s answers and holds %d vLLM engine series (%s); each rollout's "
        "engines must be scraped with namespace and pod labels (chart: %s), else the "
        "rollout is Degraded MetricsUnavailable %.0f s after its engines are Ready",
        source.url,
        count,
        ENGINE_GAUGE,
        CHART_VALUE,
        runtime.settings.engine_scrape_grace_seconds,
    )
