"""Production's step-ITL histogram in time blocks, for the guard's latency half.

Why blocks (`domain.latency_drift`): like the acceptance half, the bound rests on time
blocks as independent units, so it needs each block's bucket increases (one stepped range
query). A block without its +Inf bucket is left out, never zeros. More: docs/internals.md.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from specdecode.adapters.metrics.access import PrometheusReader
from specdecode.adapters.metrics.blocks import whole_blocks
from specdecode.adapters.metrics.prometheus import STEP_ITL_BUCKETS
from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.domain.observations import MetricError, StepHistogram


def tail_block_query(engine: EngineSelector, seconds: int) -> str:
    """Each bucket's increase over each block, summed over the engine's pods, by `le`."""
    selector = f'namespace="{engine.namespace}",pod=~"{engine.pod_regex}"'
    return f"sum by (le) (increase({STEP_ITL_BUCKETS}{{{selector}}}[{seconds}s]))"


def histograms_by_time(rows: list[dict[str, Any]]) -> tuple[StepHistogram, ...]:
    """A matrix answer, one series per `le`, as one histogram per timestamp in time order.

    Equal bounds spelled differently ("1" and "1.0") are merged; NaN samples are left out;
    a timestamp without a +Inf bucket is no block.
    """
    by_time: dict[float, dict[float, float]] = {}
    for row in rows:
        bound = float(row["metric"]["le"])  # "+Inf" parses as math.inf
        for stamp, text in row["values"]:
            value = float(text)
            if math.isnan(value):
                continue
            counts = by_time.setdefault(float(stamp), {})
            counts[bound] = counts.get(bound, 0.0) + value
    blocks = []
    for stamp in sorted(by_time):
        counts = by_time[stamp]
        if math.inf not in counts:
            continue
        bounds = tuple(sorted(counts))
        blocks.append(StepHistogram(bounds, tuple(counts[b] for b in bounds)))
    return tuple(blocks)


class PrometheusTailBlocks(PrometheusReader):
    """Production's step-ITL bucket increases per time block, from a Prometheus server."""

    async def tail_blocks(
        self, engine: EngineSelector, start: datetime, end: datetime, block_seconds: int
    ) -> tuple[StepHistogram, ...] | MetricError:
        """The whole blocks of [start, end]; none (empty) when the window holds none."""
        query = tail_block_query(engine, block_seconds)
        return await whole_blocks(self, (query,), histograms_by_time, start, end, block_seconds)


class NoTailBlocks:
    """A source for runtimes built without Prometheus: the latency half never has data."""

    async def tail_blocks(
        self, engine: EngineSelector, start: datetime, end: datetime, block_seconds: int
    ) -> tuple[StepHistogram, ...] | MetricError:
        """Always empty: no blocks, no verdict."""
        return ()
