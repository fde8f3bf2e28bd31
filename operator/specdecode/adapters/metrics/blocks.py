"""Production's acceptance counters in time blocks, for the drift guard (`domain.drift`).

Why blocks and not one window: the guard's bound rests on time blocks as its independent
units. One stepped range query of `increase()` per counter over production's pods; a block
missing a counter is left out (no data, never zeros). More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import requests
from prometheus_api_client.exceptions import PrometheusApiClientException

from specdecode.adapters.metrics.access import (
    PrometheusReader,
)
from specdecode.adapters.metrics.prometheus import ACCEPTED, DRAFT_TOKENS, MALFORMED, why
from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.domain.drift import AcceptanceBlock
from specdecode.domain.observations import MetricError

COUNTERS = (DRAFT_TOKENS, ACCEPTED)  # in the order `_join_counters` takes them


def block_query(metric: str, engine: EngineSelector, seconds: int) -> str:
    """The counter's increase over each block, summed over the engine's pods."""
    selector = f'namespace="{engine.namespace}",pod=~"{engine.pod_regex}"'
    return f"sum(increase({metric}{{{selector}}}[{seconds}s]))"


def by_time(rows: list[dict[str, Any]]) -> dict[float, float]:
    """A matrix answer of one series as timestamp -> value; NaN samples are left out."""
    values: dict[float, float] = {}
    for row in rows:
        for stamp, text in row["values"]:
            value = float(text)
            if not math.isnan(value):
                values[float(stamp)] = values.get(float(stamp), 0.0) + value
    return values


def join_blocks(
    drafts: dict[float, float], accepted: dict[float, float]
) -> tuple[AcceptanceBlock, ...]:
    """Blocks in time order where both counters answered."""
    return tuple(
        AcceptanceBlock(draft_tokens=drafts[t], accepted_tokens=min(drafts[t], accepted[t]))
        for t in sorted(drafts)
        if t in accepted
    )


Block = TypeVar("Block")


async def whole_blocks(
    reader: PrometheusReader,
    queries: tuple[str, ...],
    join: Callable[..., tuple[Block, ...]],
    start: datetime,
    end: datetime,
    block_seconds: int,
) -> tuple[Block, ...] | MetricError:
    """What every per-block source does around its queries: no query for a window shorter
    than one block (no blocks: no data, never zeros), one stepped range query per PromQL
    expression (the first block ends one block after `start`) off the event loop, the
    answers given to `join` in order, and a failed or malformed answer returned as a
    MetricError, never raised."""
    if (end - start).total_seconds() < block_seconds:
        return ()
    first = start + timedelta(seconds=block_seconds)

    def read() -> tuple[Block, ...]:
        return join(*(reader._range(query, first, end, block_seconds) for query in queries))

    try:
        return await asyncio.to_thread(read)
    except (PrometheusApiClientException, requests.RequestException, *MALFORMED) as error:
        return MetricError(source=f"prometheus {reader.url}", message=why(error))


class PrometheusAcceptanceBlocks(PrometheusReader):
    """Production's draft and accepted tokens per time block, from a Prometheus server."""

    async def acceptance_blocks(
        self, engine: EngineSelector, start: datetime, end: datetime, block_seconds: int
    ) -> tuple[AcceptanceBlock, ...] | MetricError:
        """The whole blocks of [start, end]; none (empty) when the window holds none."""
        queries = tuple(block_query(metric, engine, block_seconds) for metric in COUNTERS)
        return await whole_blocks(self, queries, _join_counters, start, end, block_seconds)


def _join_counters(
    drafts: list[dict[str, Any]], accepted: list[dict[str, Any]]
) -> tuple[AcceptanceBlock, ...]:
    return join_blocks(by_time(drafts), by_time(accepted))


class NoAcceptanceBlocks:
    """A source for runtimes built without Prometheus: the guard never has data."""

    async def acceptance_blocks(
        self, engine: EngineSelector, start: datetime, end: datetime, block_seconds: int
    ) -> tuple[AcceptanceBlock, ...] | MetricError:
        """Always empty: no blocks, no verdict."""
        return ()
