"""Production's running-request histogram from Prometheus, to weight a tuning's ladder.

Why: the config a tuning recommends depends on how often production's engines sit at each
concurrency. Sampled per pod (the ladder's loads are per engine), idle samples left out; a
window with no busy sample is an empty histogram (unknown), never an error.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime
from typing import Any

import requests
from prometheus_api_client.exceptions import PrometheusApiClientException

from specdecode.adapters.metrics.access import (
    PrometheusReader,
)
from specdecode.adapters.metrics.prometheus import MALFORMED, why
from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.domain.observations import MetricError

RUNNING = "vllm:num_requests_running"
MIN_STEP_SECONDS = 15  # a usual scrape interval: finer steps only repeat the same sample
MAX_POINTS = 1000  # per pod: well under Prometheus' 11 000 points per series


def running_query(engine: EngineSelector) -> str:
    """Each pod's running requests (its series summed), one series per pod."""
    selector = f'namespace="{engine.namespace}",pod=~"{engine.pod_regex}"'
    return f"sum by (pod)({RUNNING}{{{selector}}})"


def step_seconds(start: datetime, end: datetime) -> int:
    """At most MAX_POINTS samples per pod over the window, never finer than MIN_STEP."""
    window = max(0.0, (end - start).total_seconds())
    return max(MIN_STEP_SECONDS, math.ceil(window / MAX_POINTS))


def parse_running(rows: list[dict[str, Any]]) -> dict[int, float]:
    """Matrix rows (one per pod) as concurrency -> share of busy pod-samples.

    Values are rounded to whole requests (a gauge of a count; Prometheus answers floats);
    NaN samples are skipped; a negative count is a malformed answer (ValueError).
    """
    counts: dict[int, int] = {}
    for row in rows:
        for _, text in row["values"]:
            value = float(text)
            if math.isnan(value):
                continue
            if value < 0:
                raise ValueError(f"{RUNNING} is negative ({value}) for {row['metric']}")
            concurrency = round(value)
            if concurrency > 0:
                counts[concurrency] = counts.get(concurrency, 0) + 1
    total = sum(counts.values())
    return {c: counts[c] / total for c in sorted(counts)}


class PrometheusRunningRequests(PrometheusReader):
    """`RunningRequestsSource` backed by a Prometheus server."""

    async def running_histogram(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> dict[int, float] | MetricError:
        """Share of busy pod-samples per concurrency over [start, end]; {} when none."""
        try:
            return await asyncio.to_thread(self._histogram, engine, start, end)
        except (PrometheusApiClientException, requests.RequestException, *MALFORMED) as error:
            return MetricError(source=f"prometheus {self.url}", message=why(error))

    def _histogram(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> dict[int, float]:
        return parse_running(
            self._range(running_query(engine), start, end, step_seconds(start, end))
        )


class UnknownRunningRequests:
    """`RunningRequestsSource` that knows nothing: for runtimes built without Prometheus."""

    async def running_histogram(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> dict[int, float] | MetricError:
        """Always unknown (empty), so the tuning falls back to productionConcurrency."""
        return {}
