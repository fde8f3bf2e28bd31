"""Which engine pods Prometheus holds a series of: the check that it scrapes them at all.

One instant query of `domain.engine_metrics.presence_query` (vLLM's running-requests gauge
of the named pods); the answer is the set of pod names among its rows. An empty answer is
an empty set (the check's finding, not an error); a failed or malformed answer is a
MetricError, which the check treats as unknown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import requests
from prometheus_api_client.exceptions import PrometheusApiClientException

from specdecode.adapters.metrics.access import (
    PrometheusReader,
)
from specdecode.adapters.metrics.prometheus import MALFORMED, why
from specdecode.domain.engine_metrics import ENGINE_GAUGE, presence_query
from specdecode.domain.observations import MetricError


def scraped_pods(rows: list[dict[str, Any]]) -> frozenset[str]:
    """The `pod` label of each row (a pod may export several series)."""
    return frozenset(str(row["metric"]["pod"]) for row in rows if "pod" in row["metric"])


class PrometheusEngineSeries(PrometheusReader):
    """`EngineSeriesSource` backed by a Prometheus server."""

    async def pods_with_series(
        self, namespace: str, pods: Sequence[str]
    ) -> frozenset[str] | MetricError:
        """The pods among `pods` (of `namespace`) whose engine gauge Prometheus holds now."""
        try:
            return await asyncio.to_thread(self._ask, presence_query(namespace, pods))
        except (PrometheusApiClientException, requests.RequestException, *MALFORMED) as error:
            return MetricError(source=f"prometheus {self.url}", message=why(error))

    async def engine_series_count(self) -> int | MetricError:
        """How many engine series Prometheus holds in all (the start-up line)."""
        try:
            rows = await asyncio.to_thread(self._instant, f"count({ENGINE_GAUGE})")
            return int(float(rows[0]["value"][1])) if rows else 0
        except (PrometheusApiClientException, requests.RequestException, *MALFORMED) as error:
            return MetricError(source=f"prometheus {self.url}", message=why(error))

    def _ask(self, promql: str) -> frozenset[str]:
        return scraped_pods(self._instant(promql))


class UnknownEngineSeries:
    """`EngineSeriesSource` that knows nothing: for runtimes built without Prometheus."""

    url = ""

    async def pods_with_series(
        self, namespace: str, pods: Sequence[str]
    ) -> frozenset[str] | MetricError:
        """Always unknown: the check then sets nothing."""
        return MetricError(source="none", message="no Prometheus configured")

    async def engine_series_count(self) -> int | MetricError:
        """Always unknown."""
        return MetricError(source="none", message="no Prometheus configured")
