"""vLLM's request outcomes per engine from Prometheus: Mirror's ErrorRate evidence.

Counts per finish reason over the window, whether an engine restarted in it, and what was
in flight at its start and end. No series answering is `scraped` False (unknown), never
zero failures. The queries: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime
from typing import Any

import requests
from prometheus_api_client.exceptions import PrometheusApiClientException

from specdecode.adapters.metrics.access import PrometheusReader
from specdecode.adapters.metrics.prometheus import (
    MALFORMED,
    MIN_WINDOW_SECONDS,
    why,
    window_query,
)
from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.domain.observations import REQUEST_OUTCOMES_SERIES, EngineOutcomes, MetricError

IN_FLIGHT = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def outcomes_query(engine: EngineSelector, seconds: int) -> str:
    """Each finished_reason's increase over the window, one row per reason."""
    return window_query(REQUEST_OUTCOMES_SERIES, engine, seconds, by="finished_reason")


def resets_query(engine: EngineSelector, seconds: int) -> str:
    """Counter resets of the engine's outcome series in the window (a restarted engine)."""
    selector = f'namespace="{engine.namespace}",pod=~"{engine.pod_regex}"'
    return f"sum(resets({REQUEST_OUTCOMES_SERIES}{{{selector}}}[{seconds}s]))"


def in_flight_query(engine: EngineSelector) -> str:
    """Requests running or waiting in the engine now (at the query's evaluation time)."""
    selector = f'namespace="{engine.namespace}",pod=~"{engine.pod_regex}"'
    return " + ".join(f"sum({gauge}{{{selector}}})" for gauge in IN_FLIGHT)


def _value(row: dict[str, Any]) -> float:
    value = float(row["value"][1])
    return 0.0 if math.isnan(value) else value


def parse_outcomes(
    rows: list[dict[str, Any]],
    resets: list[dict[str, Any]],
    in_flight: list[dict[str, Any]],
    in_flight_at_start: list[dict[str, Any]] | None = None,
) -> EngineOutcomes:
    """The four answers as one engine's outcomes; no outcome rows is `scraped` False."""
    by_reason: dict[str, float] = {}
    for row in rows:
        reason = str(row["metric"]["finished_reason"])
        by_reason[reason] = by_reason.get(reason, 0.0) + _value(row)
    return EngineOutcomes(
        by_reason=by_reason,
        restarts=_value(resets[0]) if resets else 0.0,
        scraped=bool(rows),
        in_flight=_value(in_flight[0]) if in_flight else 0.0,
        in_flight_at_start=_value(in_flight_at_start[0]) if in_flight_at_start else 0.0,
        in_flight_known=bool(in_flight) and bool(in_flight_at_start),
    )


class PrometheusRequestOutcomes(PrometheusReader):
    """`RequestOutcomeSource` backed by a Prometheus server."""

    async def request_outcomes(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> EngineOutcomes | MetricError:
        """The engine's finished requests by reason over [start, end]; see the module."""
        seconds = max(MIN_WINDOW_SECONDS, math.ceil((end - start).total_seconds()))
        try:
            return await asyncio.to_thread(self._read, engine, seconds, start, end)
        except (PrometheusApiClientException, requests.RequestException, *MALFORMED) as error:
            return MetricError(source=f"prometheus {self.url}", message=why(error))

    def _read(
        self, engine: EngineSelector, seconds: int, start: datetime, end: datetime
    ) -> EngineOutcomes:
        at = {"time": f"{end.timestamp():.3f}"}
        return parse_outcomes(
            self._instant(outcomes_query(engine, seconds), at),
            self._instant(resets_query(engine, seconds), at),
            self._instant(in_flight_query(engine), at),
            self._instant(in_flight_query(engine), {"time": f"{start.timestamp():.3f}"}),
        )


class UnknownRequestOutcomes:
    """No outcome source configured (tests, tools): every engine's outcomes unknown, so a
    Mirror ErrorRate gate stays Inconclusive naming the series, never passes on zeros."""

    async def request_outcomes(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> EngineOutcomes | MetricError:
        """Unknown (`scraped` False)."""
        return EngineOutcomes()
