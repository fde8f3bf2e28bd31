"""The scrape check's I/O: one instant query for the settled pods, asked once per pod set
(again only while some are missing, and then no sooner than RECHECK_SECONDS)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from specdecode.adapters.engine_series import (
    RECHECK_SECONDS,
    EngineSeriesMemory,
    shadow_engine_pods,
)
from specdecode.adapters.metrics import PrometheusEngineSeries, UnknownEngineSeries
from specdecode.domain.engine_metrics import EnginePod
from specdecode.domain.observations import MetricError

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
PODS = ("r-baseline-1-a", "r-candidate-1-b")


class Answers:
    """An EngineSeriesSource answering from a list, counting the questions."""

    url = "http://p:9090"

    def __init__(self, *answers: frozenset[str] | MetricError) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    async def pods_with_series(
        self, namespace: str, pods: Sequence[str]
    ) -> frozenset[str] | MetricError:
        self.asked.append((namespace, tuple(pods)))
        return self.answers.pop(0)

    async def engine_series_count(self) -> int | MetricError:
        return 0


def seconds(n: float) -> datetime:
    return T0 + timedelta(seconds=n)


async def test_seen_series_are_not_asked_for_again() -> None:
    memory, source = EngineSeriesMemory(), Answers(frozenset(PODS))
    for n in (0, 5, 600):
        assert await memory.scraped(source, "ns/r", "ns", PODS, seconds(n)) == frozenset(PODS)
    assert source.asked == [("ns", PODS)]
    assert memory.next_check("ns/r") is None  # nothing left to wake for


async def test_missing_series_are_asked_again_no_sooner_than_the_recheck() -> None:
    memory = EngineSeriesMemory()
    source = Answers(frozenset(), frozenset(), frozenset(PODS))
    assert await memory.scraped(source, "ns/r", "ns", PODS, seconds(0)) == frozenset()
    assert memory.next_check("ns/r") == seconds(RECHECK_SECONDS)
    assert await memory.scraped(source, "ns/r", "ns", PODS, seconds(5)) == frozenset()
    assert len(source.asked) == 1  # a reconcile within the recheck asks nothing
    await memory.scraped(source, "ns/r", "ns", PODS, seconds(RECHECK_SECONDS))
    assert await memory.scraped(source, "ns/r", "ns", PODS, seconds(40)) == frozenset(PODS)
    assert len(source.asked) == 3


async def test_new_pod_names_are_asked_at_once() -> None:
    memory = EngineSeriesMemory()
    source = Answers(frozenset(PODS[:1]), frozenset({"r-candidate-2-c"}))
    await memory.scraped(source, "ns/r", "ns", PODS[:1], seconds(0))
    restarted = ("r-candidate-2-c",)
    assert await memory.scraped(source, "ns/r", "ns", restarted, seconds(1)) == frozenset(restarted)
    assert [pods for _, pods in source.asked] == [PODS[:1], restarted]


async def test_an_unanswered_question_is_unknown_and_retried_at_the_recheck() -> None:
    memory = EngineSeriesMemory()
    source = Answers(MetricError(source="p", message="refused"), frozenset(PODS))
    assert await memory.scraped(source, "ns/r", "ns", PODS, seconds(0)) is None
    assert await memory.scraped(source, "ns/r", "ns", PODS, seconds(1)) is None
    assert await memory.scraped(source, "ns/r", "ns", PODS, seconds(16)) == frozenset(PODS)
    assert len(source.asked) == 2


def test_the_wake_is_the_earliest_of_a_grace_end_and_a_recheck() -> None:
    memory = EngineSeriesMemory()
    memory.expect("ns/r", seconds(35))
    assert memory.next_check("ns/r") == seconds(35)
    memory.forget("ns/r")
    assert memory.next_check("ns/r") is None


def _pod(name: str, role: str | None, ready: str | None, **extra: Any) -> dict[str, Any]:
    labels = {"specdecode.io/rollout": "r"} | ({"specdecode.io/role": role} if role else {})
    conditions = [] if ready is None else [{"type": "Ready", **_ready(ready)}]
    return {
        "metadata": {"name": name, "labels": labels, **extra},
        "status": {"conditions": conditions},
    }


def _ready(since: str) -> dict[str, str]:
    if since == "no":
        return {"status": "False", "lastTransitionTime": "2026-11-26T10:00:00Z"}
    return {"status": "True", "lastTransitionTime": since}


def test_shadow_engine_pods_with_their_ready_time() -> None:
    pods = [
        _pod("r-baseline-1-a", "baseline", "2026-11-26T10:00:05Z"),
        _pod("r-candidate-1-b", "candidate", "no"),
        _pod("r-candidate-1-c", "candidate", None),
        _pod("r-7f-prod", "production", "2026-11-26T10:00:05Z"),  # not a shadow
        _pod("r-load-0", None, "2026-11-26T10:00:05Z"),  # a load pod
        _pod("r-baseline-0-z", "baseline", "2026-11-26T09:00:00Z", deletionTimestamp="x"),
    ]
    assert shadow_engine_pods(pods) == [
        EnginePod("r-baseline-1-a", seconds(5)),
        EnginePod("r-candidate-1-b", None),
        EnginePod("r-candidate-1-c", None),
    ]


async def test_one_instant_query_of_the_gauge_by_namespace_and_pod(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = PrometheusEngineSeries("http://p:9090", 7.0)
    asked: list[str] = []

    def custom_query(query: str, **kwargs: Any) -> list[dict[str, Any]]:
        asked.append(query)
        assert kwargs == {"params": None, "timeout": 7.0}  # params=None: the client's default
        return [
            {"metric": {"pod": PODS[0], "model_name": "a"}, "value": [0, "0"]},
            {"metric": {"pod": PODS[0], "model_name": "b"}, "value": [0, "1"]},
        ]

    monkeypatch.setattr(source._client, "custom_query", custom_query)
    assert await source.pods_with_series("ns", PODS) == frozenset({PODS[0]})
    assert asked == [f'vllm:num_requests_running{{namespace="ns",pod=~"{PODS[0]}|{PODS[1]}"}}']


async def test_a_failed_or_odd_answer_is_a_metric_error(monkeypatch: pytest.MonkeyPatch) -> None:
    source = PrometheusEngineSeries("http://p:9090", 7.0)

    def refuse(*_: Any, **__: Any) -> list[dict[str, Any]]:
        raise requests.ConnectionError("connection refused")

    monkeypatch.setattr(source._client, "custom_query", refuse)
    found = await source.pods_with_series("ns", PODS)
    assert found == MetricError(source="prometheus http://p:9090", message="connection refused")
    monkeypatch.setattr(source._client, "custom_query", lambda *_, **__: [{"value": 1}])
    assert isinstance(await source.pods_with_series("ns", PODS), MetricError)
    assert isinstance(await UnknownEngineSeries().pods_with_series("ns", PODS), MetricError)


async def test_the_start_up_count(monkeypatch: pytest.MonkeyPatch) -> None:
    source = PrometheusEngineSeries("http://p:9090", 7.0)
    monkeypatch.setattr(source._client, "custom_query", lambda *_, **__: [{"value": [0, "4"]}])
    assert await source.engine_series_count() == 4
    monkeypatch.setattr(source._client, "custom_query", lambda *_, **__: [])
    assert await source.engine_series_count() == 0
