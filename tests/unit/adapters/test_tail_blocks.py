"""Production's step-ITL histogram per time block from Prometheus: the query selects
production's pods only, by `le`; a block without its +Inf bucket is left out (no data,
never zeros); a failed backend is a MetricError."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime, timedelta

import pytest

from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.adapters.metrics.tail_blocks import (
    PrometheusTailBlocks,
    histograms_by_time,
    tail_block_query,
)
from specdecode.domain.observations import MetricError, StepHistogram

pytestmark = pytest.mark.unit

PRODUCTION = EngineSelector("serving", "llama")


def test_the_query_sums_production_pods_bucket_increases_per_block_by_le() -> None:
    assert tail_block_query(PRODUCTION, 30) == (
        'sum by (le) (increase(vllm:inter_token_latency_seconds_bucket{namespace="serving",'
        'pod=~"llama-[a-z0-9]+-[a-z0-9]+"}[30s]))'
    )


def test_rows_by_le_become_one_histogram_per_block_in_time_order() -> None:
    rows = [
        {"metric": {"le": "0.05"}, "values": [[20, "90"], [10, "40"], [30, "NaN"]]},
        {"metric": {"le": "0.050"}, "values": [[10, "5"]]},  # the same bound, spelled apart
        {"metric": {"le": "+Inf"}, "values": [[10, "50"], [20, "100"]]},
        {"metric": {"le": "0.1"}, "values": [[30, "7"]]},  # a block without +Inf: none
    ]
    assert histograms_by_time(rows) == (
        StepHistogram((0.05, math.inf), (45.0, 50.0)),
        StepHistogram((0.05, math.inf), (90.0, 100.0)),
    )


class _Failing:
    def custom_query_range(self, *args: object, **kwargs: object) -> object:
        raise ValueError("bad gateway")


def test_a_failed_backend_is_a_metric_error_and_a_short_window_is_no_blocks() -> None:
    source = PrometheusTailBlocks("http://prometheus:9090", 5.0)
    source._client = _Failing()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    failed = asyncio.run(source.tail_blocks(PRODUCTION, start, start + timedelta(seconds=60), 5))
    assert isinstance(failed, MetricError) and "bad gateway" in failed.message
    short = asyncio.run(source.tail_blocks(PRODUCTION, start, start + timedelta(seconds=3), 5))
    assert short == ()
