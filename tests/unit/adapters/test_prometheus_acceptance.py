"""The acceptance query path against a real HTTP server speaking Prometheus' query API.

`PrometheusMetrics.acceptance` goes through prometheus-api-client and requests to a loopback
server that answers `/api/v1/query` from a table keyed by the exact PromQL, so each counter
lands in its own field only if the operator asks for exactly that series, over the stage's
window, evaluated at its end; and a refused or malformed answer comes back as MetricError.

The table's keys are PromQL written out by hand from vLLM's metric names
(/work/shared/reference/vllm.md: counters matched with their `_total` suffix exactly), never
built with the adapter's own query builder: a wrong name, selector or window must miss.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from specdecode.adapters.metrics.prometheus import PrometheusMetrics, longest_request_edge
from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.domain.observations import AcceptanceCounts, MetricError, StepHistogram

pytestmark = pytest.mark.unit

CANDIDATE = EngineSelector("team-a", "llama-candidate")
END = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
START = END - timedelta(seconds=90)
SAMPLE_TIME = 1767268800.0
# The candidate's pods: Deployment `llama-candidate`, then the ReplicaSet hash and a suffix.
PODS = 'namespace="team-a",pod=~"llama-candidate-[a-z0-9]+-[a-z0-9]+"'


def drafts(seconds: int) -> str:
    return f"sum(increase(vllm:spec_decode_num_drafts_total{{{PODS}}}[{seconds}s]))"


def draft_tokens(seconds: int) -> str:
    return f"sum(increase(vllm:spec_decode_num_draft_tokens_total{{{PODS}}}[{seconds}s]))"


def accepted(seconds: int) -> str:
    return f"sum(increase(vllm:spec_decode_num_accepted_tokens_total{{{PODS}}}[{seconds}s]))"


def accepted_per_position(seconds: int) -> str:
    metric = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    return f"sum by (position)(increase({metric}{{{PODS}}}[{seconds}s]))"


def finished_requests(seconds: int) -> str:
    """Completed requests only: vLLM counts aborted (and failed) ones in the same series."""
    completed = 'finished_reason=~"stop|length|repetition"'
    return f"sum(increase(vllm:request_success_total{{{PODS},{completed}}}[{seconds}s]))"


def request_lengths(seconds: int) -> str:
    """Generated tokens per finished request (vLLM's 1-2-5 buckets): Mirror's length bound."""
    metric = "vllm:request_generation_tokens_bucket"
    return f"sum by (le)(increase({metric}{{{PODS}}}[{seconds}s]))"


def step_buckets(seconds: int) -> str:
    metric = "vllm:inter_token_latency_seconds_bucket"
    return f"sum by (le)(increase({metric}{{{PODS}}}[{seconds}s]))"


def engine_steps(seconds: int) -> str:
    """vLLM's `iteration_tokens_total` histogram observes each engine step once."""
    return f"sum(increase(vllm:iteration_tokens_total_count{{{PODS}}}[{seconds}s]))"


@dataclass
class FakePrometheus:
    """Answers instant queries from `answers` (unknown PromQL: an empty vector, as Prometheus
    does for a series that does not exist); records every query and its evaluation time."""

    answers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)
    refuse_with: tuple[int, str] | None = None  # (status, body) for every request
    raw_body: str | None = None  # a 200 whose body is this text instead of JSON

    def answer(self, query: str) -> tuple[int, str]:
        if self.refuse_with is not None:
            return self.refuse_with
        if self.raw_body is not None:
            return 200, self.raw_body
        result = self.answers.get(query, [])
        body = {"status": "success", "data": {"resultType": "vector", "result": result}}
        return 200, json.dumps(body)


@pytest.fixture
def prometheus() -> Iterator[tuple[FakePrometheus, str]]:
    fake = FakePrometheus()

    class QueryApi(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            params = parse_qs(url.query)
            if url.path != "/api/v1/query":
                status, body = 404, "not found"
            else:
                fake.asked.append((params["query"][0], params.get("time", [""])[0]))
                status, body = fake.answer(params["query"][0])
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), QueryApi)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def scalar(value: str) -> list[dict[str, Any]]:
    return [{"metric": {}, "value": [SAMPLE_TIME, value]}]


def by_position(values: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"metric": {"position": position}, "value": [SAMPLE_TIME, value]}
        for position, value in values.items()
    ]


def acceptance_answers(seconds: int) -> dict[str, list[dict[str, Any]]]:
    """Distinct values per counter, so a counter read into the wrong field shows."""
    return {
        drafts(seconds): scalar("1200"),
        draft_tokens(seconds): scalar("3600"),
        accepted(seconds): scalar("2700"),
        finished_requests(seconds): scalar("300"),
        accepted_per_position(seconds): by_position({"1": "900", "0": "1100", "2": "700"}),
        # cumulative: 40 requests up to 100 tokens, 300 up to 200, none beyond: longest <= 200
        request_lengths(seconds): by_le({"50": "0", "100": "40", "200": "300", "500": "300"}),
    }


def by_le(values: dict[str, str]) -> list[dict[str, Any]]:
    rows = [{"metric": {"le": le}, "value": [SAMPLE_TIME, value]} for le, value in values.items()]
    last = list(values.values())[-1]
    return [*rows, {"metric": {"le": "+Inf"}, "value": [SAMPLE_TIME, last]}]


async def test_each_counter_of_the_window_lands_in_its_own_field(
    prometheus: tuple[FakePrometheus, str],
) -> None:
    fake, url = prometheus
    fake.answers = acceptance_answers(90)
    found = await PrometheusMetrics(url, timeout_seconds=5).acceptance(CANDIDATE, START, END)
    assert found == AcceptanceCounts(
        drafts=1200.0,
        draft_tokens=3600.0,
        accepted_tokens=2700.0,
        per_position_accepted=(1100.0, 900.0, 700.0),
        requests=300.0,
        longest_request_tokens=200.0,
        drafts_scraped=True,
    )
    assert sorted(query for query, _ in fake.asked) == sorted(fake.answers)
    assert {at for _, at in fake.asked} == {f"{END.timestamp():.3f}"}  # at the window's end


@pytest.mark.parametrize(
    ("length", "window"), [(timedelta(seconds=90.2), 91), (timedelta(milliseconds=400), 2)]
)
async def test_the_window_covers_the_stage_rounded_up_and_at_least_two_seconds(
    prometheus: tuple[FakePrometheus, str], length: timedelta, window: int
) -> None:
    fake, url = prometheus
    fake.answers = acceptance_answers(window)
    found = await PrometheusMetrics(url, timeout_seconds=5).acceptance(CANDIDATE, END - length, END)
    assert isinstance(found, AcceptanceCounts) and found.drafts == 1200.0
    assert all(query.endswith(f"[{window}s]))") for query, _ in fake.asked), fake.asked


@pytest.mark.parametrize(
    ("buckets", "longest"),
    [
        ({"100": "40", "200": "40", "+Inf": "40"}, 100.0),  # the highest bucket reached
        ({"100": "40", "200": "40", "+Inf": "41"}, None),  # one past the last edge: unbounded
        ({"100": "0", "200": "0", "+Inf": "0"}, None),  # no request finished
        ({}, None),  # no histogram
    ],
)
def test_the_longest_request_is_the_highest_bucket_reached(
    buckets: dict[str, str], longest: float | None
) -> None:
    rows = [{"metric": {"le": le}, "value": [SAMPLE_TIME, v]} for le, v in buckets.items()]
    assert longest_request_edge(rows) == longest


async def test_no_series_yet_is_zero_drafts_not_an_error(
    prometheus: tuple[FakePrometheus, str],
) -> None:
    _, url = prometheus  # every query answers an empty vector
    found = await PrometheusMetrics(url, timeout_seconds=5).acceptance(CANDIDATE, START, END)
    assert found == AcceptanceCounts(drafts=0.0, draft_tokens=0.0, accepted_tokens=0.0)
    assert not found.drafts_scraped  # absent: unknown, never a real zero


async def test_counters_scraped_at_zero_are_a_real_zero(
    prometheus: tuple[FakePrometheus, str],
) -> None:
    """Hole 8 (issue 33): vLLM registers its spec-decode counters at start, so a candidate
    that never drafts answers 0, which only this flag tells from a missing series."""
    fake, url = prometheus
    fake.answers = {
        drafts(90): scalar("0"),
        draft_tokens(90): scalar("0"),
        accepted(90): scalar("0"),
        finished_requests(90): scalar("252"),
    }
    found = await PrometheusMetrics(url, timeout_seconds=5).acceptance(CANDIDATE, START, END)
    assert isinstance(found, AcceptanceCounts)
    assert found.drafts_scraped and found.drafts == 0.0 and found.requests == 252.0
    fake.answers.pop(draft_tokens(90))  # one of the two counters missing: not a real zero
    found = await PrometheusMetrics(url, timeout_seconds=5).acceptance(CANDIDATE, START, END)
    assert isinstance(found, AcceptanceCounts) and not found.drafts_scraped


async def test_nan_reads_as_zero_and_missing_positions_are_filled(
    prometheus: tuple[FakePrometheus, str],
) -> None:
    fake, url = prometheus
    fake.answers = {
        drafts(90): scalar("NaN"),  # increase() over a reset
        accepted_per_position(90): [
            *by_position({"2": "40", "0": "NaN"}),
            {"metric": {}, "value": [SAMPLE_TIME, "999"]},  # no position label: not a position
        ],
    }
    found = await PrometheusMetrics(url, timeout_seconds=5).acceptance(CANDIDATE, START, END)
    assert isinstance(found, AcceptanceCounts)
    assert found.drafts == 0.0 and not found.drafts_scraped  # NaN is unknown, not zero
    assert found.per_position_accepted == (0.0, 0.0, 40.0)


async def test_a_refused_query_is_a_metric_error_naming_the_server(
    prometheus: tuple[FakePrometheus, str],
) -> None:
    fake, url = prometheus
    error = {"status": "error", "errorType": "bad_data", "error": "parse error at char 5"}
    fake.refuse_with = (400, json.dumps(error))
    found = await PrometheusMetrics(url, timeout_seconds=5).acceptance(CANDIDATE, START, END)
    assert isinstance(found, MetricError)
    assert found.source == f"prometheus {url}"
    assert "400" in found.message and "parse error" in found.message


@pytest.mark.parametrize("body", ["<html>proxy error</html>", '{"status": "success"}'])
async def test_an_answer_that_is_not_a_query_result_is_a_metric_error(
    prometheus: tuple[FakePrometheus, str], body: str
) -> None:
    fake, url = prometheus
    fake.raw_body = body
    metrics = PrometheusMetrics(url, timeout_seconds=5)
    assert isinstance(await metrics.acceptance(CANDIDATE, START, END), MetricError)
    assert isinstance(await metrics.step_itl_histogram(CANDIDATE, START, END), MetricError)


async def test_a_malformed_counter_value_is_a_metric_error(
    prometheus: tuple[FakePrometheus, str],
) -> None:
    fake, url = prometheus
    fake.answers = {accepted(90): scalar("many")}
    found = await PrometheusMetrics(url, timeout_seconds=5).acceptance(CANDIDATE, START, END)
    assert isinstance(found, MetricError) and "many" in found.message


async def test_step_buckets_and_steps_come_from_the_same_window_over_http(
    prometheus: tuple[FakePrometheus, str],
) -> None:
    fake, url = prometheus
    fake.answers = {
        step_buckets(90): [
            {"metric": {"le": "+Inf"}, "value": [SAMPLE_TIME, "4210"]},
            {"metric": {"le": "0.05"}, "value": [SAMPLE_TIME, "4000"]},
        ],
        engine_steps(90): scalar("301"),
    }
    found = await PrometheusMetrics(url, timeout_seconds=5).step_itl_histogram(
        CANDIDATE, START, END
    )
    assert found == StepHistogram((0.05, float("inf")), (4000.0, 4210.0), steps=301.0)
    assert {at for _, at in fake.asked} == {f"{END.timestamp():.3f}"}
