"""Production's acceptance per time block from Prometheus: the query selects production's
pods only, and a block missing either counter is left out (no data, never zeros)."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta

import pytest

from specdecode.adapters.metrics.blocks import (
    PrometheusAcceptanceBlocks,
    block_query,
    by_time,
    join_blocks,
)
from specdecode.adapters.metrics.prometheus import DRAFT_TOKENS
from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.domain.drift import AcceptanceBlock
from specdecode.domain.observations import MetricError

pytestmark = pytest.mark.unit

PRODUCTION = EngineSelector("serving", "llama")


def test_the_query_sums_production_pods_increase_per_block() -> None:
    query = block_query(DRAFT_TOKENS, PRODUCTION, 30)
    assert query == (
        'sum(increase(vllm:spec_decode_num_draft_tokens_total{namespace="serving",'
        'pod=~"llama-[a-z0-9]+-[a-z0-9]+"}[30s]))'
    )
    pod_regex = re.compile(PRODUCTION.pod_regex)  # PromQL anchors =~ at both ends
    assert pod_regex.fullmatch("llama-7d9f8c6b5-x2kqp")
    assert not pod_regex.fullmatch("llama-candidate-7d9f8c6b5-x2kqp")
    assert not pod_regex.fullmatch("llama-baseline-7d9f8c6b5-x2kqp")


def test_blocks_join_on_time_and_skip_what_either_counter_lacks() -> None:
    drafts = by_time(
        [{"metric": {}, "values": [[10, "300"], [20, "NaN"], [30, "600"], [40, "90"]]}]
    )
    accepted = by_time([{"metric": {}, "values": [[10, "150"], [20, "5"], [40, "120"]]}])
    assert join_blocks(drafts, accepted) == (
        AcceptanceBlock(300.0, 150.0),
        AcceptanceBlock(90.0, 90.0),  # extrapolation above the drafts is capped
    )


class _Failing:
    def custom_query_range(self, *args: object, **kwargs: object) -> object:
        raise ValueError("bad gateway")


def test_a_failed_backend_is_a_metric_error_and_a_short_window_is_no_blocks() -> None:
    source = PrometheusAcceptanceBlocks("http://prometheus:9090", 5.0)
    source._client = _Failing()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    failed = asyncio.run(
        source.acceptance_blocks(PRODUCTION, start, start + timedelta(seconds=60), 5)
    )
    assert isinstance(failed, MetricError) and "bad gateway" in failed.message
    short = asyncio.run(
        source.acceptance_blocks(PRODUCTION, start, start + timedelta(seconds=3), 5)
    )
    assert short == ()
