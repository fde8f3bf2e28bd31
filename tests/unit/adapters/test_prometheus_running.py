"""Production's running-request histogram: one range query of each pod's gauge, counted per
pod-sample (never summed over pods), idle samples left out, no data unknown (empty) and a
failed backend a MetricError, never an exception."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
from prometheus_api_client.exceptions import PrometheusApiClientException

from specdecode.adapters.metrics import PrometheusRunningRequests, UnknownRunningRequests
from specdecode.adapters.metrics.protocol import EngineSelector, RunningRequestsSource
from specdecode.adapters.metrics.running import parse_running, running_query, step_seconds
from specdecode.domain.observations import MetricError

pytestmark = pytest.mark.unit

PRODUCTION = EngineSelector("team-a", "llama")
END = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
HOUR_AGO = END - timedelta(hours=1)


def pod(name: str, values: list[str]) -> dict[str, Any]:
    """A matrix row: one pod's samples, 15 s apart."""
    start = HOUR_AGO.timestamp()
    return {"metric": {"pod": name}, "values": [[start + 15 * i, v] for i, v in enumerate(values)]}


def answering(rows: list[dict[str, Any]], asked: list[dict[str, Any]]) -> Any:
    def custom_query_range(query: str, **kwargs: Any) -> list[dict[str, Any]]:
        asked.append({"query": query, **kwargs})
        return rows

    return custom_query_range


def test_the_query_sums_series_within_each_pod_of_the_deployment_only() -> None:
    assert running_query(PRODUCTION) == (
        'sum by (pod)(vllm:num_requests_running{namespace="team-a",'
        'pod=~"llama-[a-z0-9]+-[a-z0-9]+"})'
    )


@pytest.mark.parametrize(
    ("window", "step"),
    [(timedelta(hours=1), 15), (timedelta(days=1), 87), (timedelta(days=30), 2592)],
)
def test_the_step_keeps_at_most_a_thousand_samples_per_pod_and_never_below_15_s(
    window: timedelta, step: int
) -> None:
    assert step_seconds(END - window, END) == step
    assert window.total_seconds() / step <= 1000


def test_each_pod_sample_counts_once_at_that_pods_own_concurrency() -> None:
    # Two replicas at 16 and 48: per engine the loads are 16 and 48, never their sum 64.
    rows = [pod("llama-7d9f8c6b5-a", ["16", "16", "16"]), pod("llama-7d9f8c6b5-b", ["48"] * 3)]
    assert parse_running(rows) == {16: 0.5, 48: 0.5}


def test_idle_and_nan_samples_are_left_out_and_values_rounded() -> None:
    rows = [pod("llama-7d9f8c6b5-a", ["0", "0", "3.0", "NaN", "2.6", "1"])]
    assert parse_running(rows) == {1: pytest.approx(1 / 3), 3: pytest.approx(2 / 3)}
    assert parse_running([pod("llama-7d9f8c6b5-a", ["0", "0"])]) == {}  # idle: unknown
    assert parse_running([]) == {}


def test_a_negative_count_is_malformed() -> None:
    with pytest.raises(ValueError, match="negative"):
        parse_running([pod("llama-7d9f8c6b5-a", ["-1"])])


async def test_one_range_query_over_the_window_at_the_computed_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source: RunningRequestsSource = (metrics := PrometheusRunningRequests("http://p:9090", 7.0))
    asked: list[dict[str, Any]] = []
    rows = [pod("llama-7d9f8c6b5-a", ["8", "8", "8", "64"])]
    monkeypatch.setattr(metrics._client, "custom_query_range", answering(rows, asked))
    found = await source.running_histogram(PRODUCTION, HOUR_AGO, END)
    assert found == {8: 0.75, 64: 0.25}
    assert asked == [
        {
            "query": running_query(PRODUCTION),
            "start_time": HOUR_AGO,
            "end_time": END,
            "step": "15s",
            "timeout": 7.0,
        }
    ]


async def test_no_series_is_unknown_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = PrometheusRunningRequests("http://p:9090", 7.0)
    monkeypatch.setattr(metrics._client, "custom_query_range", answering([], []))
    assert await metrics.running_histogram(PRODUCTION, HOUR_AGO, END) == {}
    assert await UnknownRunningRequests().running_histogram(PRODUCTION, HOUR_AGO, END) == {}


@pytest.mark.parametrize(
    "failure",
    [
        PrometheusApiClientException("HTTP Status Code 422 (b'too many points')"),
        requests.ConnectionError("connection refused"),
        requests.Timeout("read timed out"),
    ],
)
async def test_a_failed_backend_is_a_metric_error_naming_the_server(
    monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    metrics = PrometheusRunningRequests("http://p:9090", 7.0)

    def fail(*_: Any, **__: Any) -> list[dict[str, Any]]:
        raise failure

    monkeypatch.setattr(metrics._client, "custom_query_range", fail)
    found = await metrics.running_histogram(PRODUCTION, HOUR_AGO, END)
    assert found == MetricError(source="prometheus http://p:9090", message=str(failure))


@pytest.mark.parametrize("row", [{"metric": {}}, {"metric": {}, "value": [0, "3"]}, {"values": 3}])
async def test_an_answer_that_is_not_a_matrix_is_a_metric_error(
    monkeypatch: pytest.MonkeyPatch, row: dict[str, Any]
) -> None:
    metrics = PrometheusRunningRequests("http://p:9090", 7.0)
    monkeypatch.setattr(metrics._client, "custom_query_range", answering([row], []))
    found = await metrics.running_histogram(PRODUCTION, HOUR_AGO, END)
    assert isinstance(found, MetricError) and "malformed response" in found.message


async def test_an_unreachable_server_is_a_metric_error() -> None:
    metrics = PrometheusRunningRequests("http://127.0.0.1:9", 2.0)  # discard port: refused
    found = await metrics.running_histogram(PRODUCTION, HOUR_AGO, END)
    assert isinstance(found, MetricError)
