"""Shadow traffic adapters: prompt parsing, exact client timing, pairing, bounded memory."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from specdecode.adapters.traffic.client import RequestMeasurement, stream_chat
from specdecode.adapters.traffic.driver import DriverConfig, EndpointResolver, PairedDriver
from specdecode.adapters.traffic.manager import TrafficManager
from specdecode.domain.prompts import (
    PromptSourceError,
    ShadowRequest,
    builtin_prompts,
    parse_jsonl,
)
from specdecode.adapters.traffic.recorder import LatencyRecorder
from specdecode.domain.decision import TrafficPlan

pytestmark = pytest.mark.unit

REQUEST = ShadowRequest(messages=(("user", "hi"),), max_tokens=8, workload="code")


def driver_config(**overrides: Any) -> DriverConfig:
    """A small closed-loop stage; tests override what they exercise."""
    fields: dict[str, Any] = {
        "model": "m",
        "concurrency": 1,
        "request_rate": None,
        "seed": 0,
        "timeout_seconds": 5.0,
        "max_requests": None,
        "max_samples": 100,
    }
    return DriverConfig(**{**fields, **overrides})


def endpoints(*urls: str) -> EndpointResolver:
    """A resolver that always answers with `urls`."""

    async def resolve() -> list[str]:
        return list(urls)

    return resolve


def sse(*chunks: dict[str, object]) -> bytes:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return body.encode()


def content_chunk(text: str, cumulative: int | None) -> dict[str, object]:
    chunk: dict[str, object] = {"choices": [{"index": 0, "delta": {"content": text}}]}
    if cumulative is not None:
        chunk["usage"] = {"completion_tokens": cumulative}
    return chunk


def engine(
    body: bytes, status: int = 200, seen: list[httpx.Request] | None = None
) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, content=body, headers={"content-type": "text/event-stream"})

    return httpx.MockTransport(handler)


def test_jsonl_accepts_prompt_chat_and_sharegpt_lines() -> None:
    text = "\n".join(
        [
            json.dumps({"prompt": "p", "max_tokens": 5, "workload": "math"}),
            json.dumps({"messages": [{"role": "user", "content": "m"}]}),
            json.dumps(
                {
                    "conversations": [
                        {"from": "human", "value": "a"},
                        {"from": "gpt", "value": "b"},
                        {"from": "human", "value": "c"},
                        {"from": "gpt", "value": "d"},
                    ]
                }
            ),
        ]
    )
    requests = parse_jsonl(text, default_max_tokens=64)
    assert [r.max_tokens for r in requests] == [5, 64, 64]
    assert requests[0].workload == "math"
    assert requests[2].messages == (("user", "a"), ("assistant", "b"), ("user", "c"))


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("not json", "line 2"),
        ('{"max_tokens": 3}', "expected one of prompt"),
        ('{"prompt": "x", "max_tokens": 0}', "max_tokens must be > 0"),
        ('{"prompt": "x", "workload": "poetry"}', "workload must be one of"),
        ('{"messages": [{"role": "assistant", "content": "x"}]}', "end with a user turn"),
        ("[1, 2]", "JSON object"),
    ],
)
def test_jsonl_errors_name_the_line(line: str, fragment: str) -> None:
    with pytest.raises(PromptSourceError, match=fragment):
        parse_jsonl('{"prompt": "ok"}\n' + line, default_max_tokens=8)


def test_empty_prompt_set_is_an_error() -> None:
    with pytest.raises(PromptSourceError, match="empty"):
        parse_jsonl("\n\n", default_max_tokens=8)


def test_builtin_prompts_are_deterministic_per_seed() -> None:
    assert builtin_prompts("code", 5, 1, 32) == builtin_prompts("code", 5, 1, 32)
    assert builtin_prompts("code", 5, 1, 32) != builtin_prompts("code", 5, 2, 32)


async def test_stream_counts_tokens_per_chunk_from_continuous_usage() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        content_chunk("a", 1),
        content_chunk("b c d", 4),
        content_chunk("e f", 6),
        {"choices": [], "usage": {"completion_tokens": 6}},
    )
    seen: list[httpx.Request] = []
    async with httpx.AsyncClient(transport=engine(body, seen=seen)) as http:
        result = await stream_chat(http, "http://engine", "m", REQUEST, 7, 5.0)
    assert result.ok, result.error
    assert result.output_tokens == 6
    assert result.chunk_tokens == [3, 2]
    assert len(result.per_token_itl()) == 5
    sent = json.loads(seen[0].content)
    assert sent["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert sent["seed"] == 7
    assert seen[0].headers["X-Workload-Class"] == "code"


async def test_stream_without_usage_counts_one_token_per_chunk() -> None:
    body = sse(content_chunk("a", None), content_chunk("b", None), content_chunk("c", None))
    async with httpx.AsyncClient(transport=engine(body)) as http:
        result = await stream_chat(http, "http://engine", "m", REQUEST, 0, 5.0)
    assert result.ok and result.output_tokens == 3 and result.chunk_tokens == [1, 1]


async def test_http_error_is_a_failed_measurement_not_an_exception() -> None:
    async with httpx.AsyncClient(transport=engine(b'{"error": "boom"}', status=500)) as http:
        result = await stream_chat(http, "http://engine", "m", REQUEST, 0, 5.0)
    assert not result.ok
    assert result.error is not None and "HTTP 500" in result.error


def test_per_token_itl_spreads_each_gap_over_its_tokens() -> None:
    measurement = RequestMeasurement(
        started_at=0.0,
        ok=True,
        chunk_gaps=[0.03, 0.01],
        chunk_tokens=[3, 1],
        output_tokens=5,
        decode_seconds=0.04,
    )
    assert measurement.per_token_itl() == pytest.approx([0.01, 0.01, 0.01, 0.01])
    assert measurement.time_per_output_token() == pytest.approx(0.01)


def test_recorder_windows_by_request_start_and_bounds_memory() -> None:
    recorder = LatencyRecorder(max_samples=100, seed=1)
    for index in range(1000):
        recorder.record(
            RequestMeasurement(
                started_at=float(index),
                ok=True,
                chunk_gaps=[0.02],
                chunk_tokens=[2],
                output_tokens=3,
                decode_seconds=0.02,
            )
        )
    recorder.record(RequestMeasurement(started_at=999.0, ok=False, error="x"))
    window = recorder.snapshot(since=500.0, now=1000.0)
    assert len(recorder.snapshot(since=0.0, now=1000.0).per_token_itl) == 100
    assert all(v == pytest.approx(0.01) for v in window.per_token_itl)
    assert 0 < len(window.per_token_itl) < 100  # the reservoir keeps a spread of times
    assert window.requests_failed == 1 and recorder.last_error == "x"


async def test_paired_driver_sends_each_request_to_both_engines() -> None:
    seen: list[httpx.Request] = []
    body = sse(content_chunk("a", 1), content_chunk("b", 2))
    config = driver_config(concurrency=3, seed=5, max_requests=12, max_samples=1000)
    prompts = builtin_prompts("chat", 10, 0, 8)

    baseline, candidate = endpoints("http://baseline"), endpoints("http://candidate")

    async with httpx.AsyncClient(transport=engine(body, seen=seen)) as http:
        driver = PairedDriver(config, prompts, baseline, candidate, http)
        await driver.run()
        base, cand = driver.snapshot(since=0.0, now=1e12)
    hosts = [r.url.host for r in seen]
    assert hosts.count("baseline") == hosts.count("candidate") == 12
    by_host: dict[str, list[bytes]] = {"baseline": [], "candidate": []}
    for request in seen:
        by_host[request.url.host].append(request.content)
    assert sorted(by_host["baseline"]) == sorted(by_host["candidate"])  # identical requests
    assert base.requests_ok == cand.requests_ok == 12


async def test_missing_endpoints_are_waited_for_not_an_error() -> None:
    """Endpoints appear a moment after pods turn Ready: transient, never a failed source."""
    config = driver_config(timeout_seconds=1.0, max_requests=1, max_samples=10)
    answers = [[], ["http://engine"]]

    async def appearing() -> list[str]:
        return answers.pop(0) if len(answers) > 1 else answers[0]

    body = sse(content_chunk("a", 1), content_chunk("b", 2))
    async with httpx.AsyncClient(transport=engine(body)) as http:
        driver = PairedDriver(config, builtin_prompts("chat", 1, 0, 4), appearing, appearing, http)
        task = asyncio.create_task(driver.run())
        await asyncio.wait_for(task, timeout=10)
        base, cand = driver.snapshot(since=0.0, now=1e12)
    assert driver.error is None and driver.waiting_for is None
    assert base.requests_ok == cand.requests_ok == 1


class _Forever:
    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def run(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise

    def snapshot(self, since: float, now: float) -> tuple[object, object]:
        return ("b", "c")

    @property
    def error(self) -> str | None:
        return None


async def test_manager_replaces_traffic_when_the_plan_changes_and_stops_it() -> None:
    manager = TrafficManager()
    first, second = _Forever(), _Forever()
    plan_a = TrafficPlan("acceptance", "abc", 4, None)
    plan_b = TrafficPlan("tail-latency", "abc", 32, None)

    async def start_first() -> _Forever:
        return first

    async def start_second() -> _Forever:
        return second

    await manager.ensure("ns/r", plan_a, start_first)  # type: ignore[arg-type]
    await first.started.wait()
    await manager.ensure("ns/r", plan_a, start_second)  # type: ignore[arg-type]
    assert manager.plan("ns/r") == plan_a and not second.started.is_set()
    assert manager.snapshot("ns/r", "tail-latency", 0, 1) is None
    await manager.ensure("ns/r", plan_b, start_second)  # type: ignore[arg-type]
    await second.started.wait()
    assert first.cancelled
    await manager.ensure("ns/r", None, start_first)  # type: ignore[arg-type]
    assert second.cancelled and manager.plan("ns/r") is None


async def test_a_slow_baseline_never_holds_the_candidate_back() -> None:
    """Each engine keeps its own concurrency: the baseline answers only once the candidate
    has had every request, which would deadlock a lock-step pairing."""
    body = sse(content_chunk("a", 1), content_chunk("b", 2))
    candidate_done = asyncio.Event()
    order: dict[str, list[bytes]] = {"baseline": [], "candidate": []}

    async def handler(request: httpx.Request) -> httpx.Response:
        host = request.url.host
        order[host].append(request.content)
        if host == "candidate" and len(order["candidate"]) == 5:
            candidate_done.set()
        if host == "baseline":
            await candidate_done.wait()
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    config = driver_config(seed=3, max_requests=5)

    baseline, candidate = endpoints("http://baseline"), endpoints("http://candidate")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        driver = PairedDriver(config, builtin_prompts("chat", 50, 0, 8), baseline, candidate, http)
        await asyncio.wait_for(driver.run(), timeout=10)
    assert order["baseline"] == order["candidate"]  # the same requests in the same order


async def test_the_token_cap_bounds_shadow_cost_per_engine() -> None:
    body = sse(content_chunk("a b", 2), content_chunk("c d", 4))  # 4 tokens per request
    seen: list[httpx.Request] = []
    config = driver_config(max_output_tokens=10)

    one = endpoints("http://engine")

    async with httpx.AsyncClient(transport=engine(body, seen=seen)) as http:
        driver = PairedDriver(config, builtin_prompts("chat", 5, 0, 8), one, one, http)
        await asyncio.wait_for(driver.run(), timeout=10)
        base, cand = driver.snapshot(since=0.0, now=1e12)
    assert base.output_tokens == cand.output_tokens == 12  # stops at the first request past 10
    assert len(seen) == 6
