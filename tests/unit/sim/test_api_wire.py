"""API wire format with real clients (openai SDK, httpx) against a simulator subprocess."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families
from simtesting import (
    EAGLE3_8B,
    LLAMA_8B,
    RunningSim,
    running_simulator,
    sim_env,
    wait_for_health,
)

from specdecode_sim.acceptance import expected_draft_acceptance_rate
from specdecode_sim.metrics import ITL_BUCKETS

pytestmark = pytest.mark.unit

ACCEPTANCE = 0.8
NO_EOS = {"ignore_eos": True}


@pytest.fixture(scope="module")
def sim() -> Iterator[RunningSim]:
    env = sim_env(SPECDECODE_SIM_TIME_SCALE="0.02", SPECDECODE_SIM_ACCEPTANCE=str(ACCEPTANCE))
    flags = ("--speculative-config", EAGLE3_8B, "--max-model-len", "4096", "--seed", "3")
    with running_simulator(
        LLAMA_8B, *flags, "--served-model-name", "llama", "llama-b", env=env
    ) as running:
        yield running


@pytest.fixture(scope="module")
def client(sim: RunningSim) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{sim.base_url}/v1", api_key="unused", max_retries=0)


def test_models_version_health(sim: RunningSim, client: openai.OpenAI) -> None:
    models = client.models.list().data
    assert [m.id for m in models] == ["llama", "llama-b"]
    assert models[0].model_extra is not None and models[0].model_extra["max_model_len"] == 4096
    # No SPECDECODE_VLLM_VERSION in the environment: the pinned release.
    assert httpx.get(f"{sim.base_url}/version").json() == {"version": "0.33.0"}
    health = httpx.get(f"{sim.base_url}/health")
    assert health.status_code == 200 and health.content == b""


def test_non_streaming_chat_and_completion(client: openai.OpenAI) -> None:
    chat = client.chat.completions.create(
        model="llama",
        messages=[{"role": "user", "content": "Tell me about tea"}],
        max_tokens=20,
        extra_body=NO_EOS,
    )
    assert chat.object == "chat.completion" and chat.id.startswith("chatcmpl-")
    assert chat.choices[0].message.role == "assistant"
    assert chat.choices[0].finish_reason == "length"
    assert chat.usage is not None and chat.usage.completion_tokens == 20
    assert len((chat.choices[0].message.content or "").split()) == 20
    completion = client.completions.create(
        model="llama-b", prompt="Once upon a time", max_tokens=7, extra_body=NO_EOS
    )
    assert completion.object == "text_completion" and completion.id.startswith("cmpl-")
    assert completion.usage is not None and completion.usage.prompt_tokens == 4
    assert len(completion.choices[0].text.split()) == 7


def test_same_seed_same_text(client: openai.OpenAI) -> None:
    def once() -> str:
        result = client.completions.create(model="llama", prompt="seeded", max_tokens=30, seed=42)
        return result.choices[0].text

    assert once() == once()


def test_streaming_chat_wire_format(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="llama",
        messages=[{"role": "user", "content": "Write a poem"}],
        max_tokens=60,
        extra_body=NO_EOS,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert (
        chunks[0].choices[0].delta.role == "assistant" and chunks[0].choices[0].delta.content == ""
    )
    text_chunks = [c for c in chunks[1:] if c.choices]
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert [c.choices[0].finish_reason for c in text_chunks][-1] == "length"
    assert all(c.choices[0].finish_reason is None for c in text_chunks[:-1])
    words_per_chunk = [len((c.choices[0].delta.content or "").split()) for c in text_chunks]
    assert sum(words_per_chunk) == 60
    assert max(words_per_chunk) > 1, "spec decode must put several tokens in one chunk"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 60


def test_streaming_completion_raw_sse(sim: RunningSim) -> None:
    body = {"model": "llama", "prompt": "abc", "max_tokens": 10, "stream": True, **NO_EOS}
    with httpx.stream("POST", f"{sim.base_url}/v1/completions", json=body, timeout=30) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line]
    assert all(event.startswith("data: ") for event in events)
    assert events[-1] == "data: [DONE]"
    payloads = [json.loads(event[6:]) for event in events[:-1]]
    assert all(p["object"] == "text_completion" for p in payloads)
    assert payloads[-1]["choices"][0]["finish_reason"] == "length"
    assert payloads[-1]["usage"] is None  # vLLM dumps completion chunks with every field
    assert set(payloads[0]["choices"][0]) == {
        "index", "text", "logprobs", "finish_reason", "stop_reason", "prompt_token_ids", "token_ids"
    }  # fmt: skip


def test_streaming_chat_raw_sse_field_sets(sim: RunningSim) -> None:
    body = {
        "model": "llama",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 5,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with httpx.stream("POST", f"{sim.base_url}/v1/chat/completions", json=body) as response:
        events = [line for line in response.iter_lines() if line]
    assert events[-1] == "data: [DONE]"
    role, *texts, usage = [json.loads(event[6:]) for event in events[:-1]]
    # The pinned release (0.33) streams as 0.32.0 does: `prompt_text` on the role chunk.
    role_fields = {"id", "object", "created", "model", "choices", "prompt_token_ids"}
    assert set(role) == role_fields | {"prompt_text"}
    assert role["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert set(texts[0]["choices"][0]) == {
        "index",
        "delta",
        "logprobs",
        "finish_reason",
        "token_ids",
    }
    assert texts[-1]["choices"][0]["finish_reason"] == "length"
    assert "stop_reason" in texts[-1]["choices"][0]
    assert usage["choices"] == [] and set(usage["usage"]) == {
        "prompt_tokens", "total_tokens", "completion_tokens"
    }  # fmt: skip


def test_continuous_usage_stats_count_tokens_in_every_chunk(sim: RunningSim) -> None:
    """vLLM's stream_options.continuous_usage_stats: cumulative usage on every chunk, which
    is how a client counts the tokens each chunk carried (the operator's per-token ITL)."""
    body = {
        "model": "llama",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 40,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    with httpx.stream("POST", f"{sim.base_url}/v1/chat/completions", json=body) as response:
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    text_chunks = [e for e in events if e["choices"] and e["choices"][0]["delta"].get("content")]
    cumulative = [e["usage"]["completion_tokens"] for e in text_chunks]
    words = [len(e["choices"][0]["delta"]["content"].split()) for e in text_chunks]
    assert cumulative == sorted(cumulative) and cumulative[-1] == 40
    assert [b - a for a, b in zip([0, *cumulative], cumulative, strict=False)] == words
    assert events[0]["usage"]["completion_tokens"] == 0


@pytest.mark.parametrize(
    ("path", "body", "status", "fragment"),
    [
        ("/v1/completions", b"{not json", 400, "JSON decode error"),
        ("/v1/completions", b"[1, 2]", 400, "valid dictionary"),
        ("/v1/completions", b"", 400, "JSON decode error"),
        (
            "/v1/completions",
            b'{"prompt": "x", "max_tokens": 0}',
            400,
            "max_tokens must be at least 1, got 0.",
        ),
        (
            "/v1/completions",
            b'{"prompt": "x", "max_tokens": -5}',
            400,
            "max_tokens must be at least 1",
        ),
        (
            "/v1/completions",
            b'{"prompt": "x", "model": "gpt-4"}',
            404,
            "The model `gpt-4` does not exist.",
        ),
        (
            "/v1/completions",
            json.dumps({"prompt": "w " * 5000}).encode(),
            400,
            "maximum context length is 4096",
        ),
        (
            "/v1/completions",
            b'{"prompt": "x", "max_tokens": 5000}',
            400,
            "max_tokens=5000 cannot be greater than max_model_len=4096",  # 0.32+ wording
        ),
        ("/v1/completions", b'{"max_tokens": 3}', 400, "prompt"),
        ("/v1/completions", b'{"prompt": {"a": 1}}', 400, "prompt"),
        ("/v1/completions", b'{"prompt": "x", "max_tokens": "many"}', 400, "valid integer"),
        ("/v1/completions", b'{"prompt": "x", "stream": "yes"}', 400, "boolean"),
        (
            "/v1/completions",
            b'{"prompt": "x", "stream_options": {"include_usage": true}}',
            400,
            "stream=True",
        ),
        ("/v1/chat/completions", b'{"messages": "hi"}', 400, "messages"),
        ("/v1/chat/completions", b'{"messages": [{"content": "hi"}]}', 400, "role"),
        ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": 5}]}', 400, "content"),
        (
            "/v1/chat/completions",
            b'{"messages": [{"role": "user", "content": "x"}], "temperature": -1}',
            400,
            "temperature",
        ),
        (
            "/v1/chat/completions",
            b'{"messages": [{"role": "user", "content": "x"}], "specdecode_workload": "poetry"}',
            400,
            "poetry",
        ),
    ],
)
def test_bad_requests_get_openai_errors(
    sim: RunningSim, path: str, body: bytes, status: int, fragment: str
) -> None:
    response = httpx.post(
        f"{sim.base_url}{path}", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == status
    error = response.json()["error"]
    assert fragment in error["message"] and error["code"] == status
    after = httpx.post(
        f"{sim.base_url}/v1/completions", json={"prompt": "still alive", "max_tokens": 2}
    )
    assert after.status_code == 200


def _families(sim: RunningSim) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    text = httpx.get(f"{sim.base_url}/metrics").text
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def test_metrics_names_types_labels_and_consistency(sim: RunningSim, client: openai.OpenAI) -> None:
    for _ in range(6):
        client.completions.create(
            model="llama", prompt="count the stars", max_tokens=120, extra_body=NO_EOS
        )
    text = httpx.get(f"{sim.base_url}/metrics").text
    types = {f.name: f.type for f in text_string_to_metric_families(text)}
    for counter in (
        "vllm:spec_decode_num_drafts",
        "vllm:spec_decode_num_draft_tokens",
        "vllm:spec_decode_num_accepted_tokens",
        "vllm:spec_decode_num_accepted_tokens_per_pos",
        "vllm:prompt_tokens",
        "vllm:generation_tokens",
        "vllm:request_success",
        "vllm:num_preemptions",
    ):
        assert types[counter] == "counter", counter
    for histogram in (
        "vllm:inter_token_latency_seconds",
        "vllm:request_time_per_output_token_seconds",
        "vllm:time_to_first_token_seconds",
        "vllm:e2e_request_latency_seconds",
        "vllm:request_queue_time_seconds",
        "vllm:request_prefill_time_seconds",
        "vllm:request_decode_time_seconds",
        "vllm:request_inference_time_seconds",
    ):
        assert types[histogram] == "histogram", histogram
    for gauge in (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
    ):
        assert types[gauge] == "gauge", gauge
    assert "vllm:time_per_output_token_seconds" not in types  # removed in 0.15
    samples = _families(sim)
    base = (("engine", "0"), ("model_name", "llama"))
    drafts = samples["vllm:spec_decode_num_drafts_total"][base]
    drafted = samples["vllm:spec_decode_num_draft_tokens_total"][base]
    accepted = samples["vllm:spec_decode_num_accepted_tokens_total"][base]
    per_pos = [
        samples["vllm:spec_decode_num_accepted_tokens_per_pos_total"][
            (*base[:1], *base[1:], ("position", str(i)))
        ]
        for i in range(3)
    ]
    assert drafts > 100 and drafted == 3 * drafts and accepted <= drafted
    assert per_pos == sorted(per_pos, reverse=True) and sum(per_pos) == accepted
    assert accepted / drafted == pytest.approx(
        expected_draft_acceptance_rate((ACCEPTANCE,) * 3), abs=0.05
    )
    les = sorted(
        float(dict(labels)["le"]) for labels in samples["vllm:inter_token_latency_seconds_bucket"]
    )
    assert les == sorted([*ITL_BUCKETS, float("inf")])
    length_key = tuple(sorted((*base, ("finished_reason", "length"))))
    assert samples["vllm:request_success_total"][length_key] >= 6
    assert samples["vllm:generation_tokens_total"][base] >= 720


def test_disable_log_stats_turns_vllm_metrics_off() -> None:
    with running_simulator(LLAMA_8B, "--disable-log-stats") as running:
        assert "vllm:" not in httpx.get(f"{running.base_url}/metrics").text


def test_health_is_503_during_warm_up() -> None:
    env = sim_env(SPECDECODE_SIM_TIME_SCALE="1", SPECDECODE_SIM_WARMUP_SECONDS="3")
    with running_simulator(LLAMA_8B, env=env, wait_healthy=False) as running:
        deadline = time.monotonic() + 15
        first_answer: int | None = None
        while first_answer is None and time.monotonic() < deadline:
            try:
                first_answer = httpx.get(f"{running.base_url}/health").status_code
            except httpx.TransportError:
                time.sleep(0.05)
        assert first_answer == 503, "the first /health answer must come during warm-up"
        wait_for_health(running.base_url, running.process, 15.0)


def test_crash_after_requests_kills_the_engine() -> None:
    env = sim_env(SPECDECODE_SIM_TIME_SCALE="0.02", SPECDECODE_SIM_CRASH_AFTER_REQUESTS="2")
    with running_simulator(LLAMA_8B, env=env) as running:
        for _ in range(2):
            assert (
                httpx.post(
                    f"{running.base_url}/v1/completions", json={"prompt": "x", "max_tokens": 2}
                ).status_code
                == 200
            )
        with pytest.raises(httpx.TransportError):
            httpx.post(f"{running.base_url}/v1/completions", json={"prompt": "x", "max_tokens": 2})
        assert running.process.wait(timeout=10) == 1


def test_api_key_and_error_rate_faults() -> None:
    env = sim_env(SPECDECODE_SIM_TIME_SCALE="0.02", SPECDECODE_SIM_ERROR_RATE="1")
    with running_simulator(LLAMA_8B, "--api-key", "k1", env=env) as running:
        url = f"{running.base_url}/v1/completions"
        denied = httpx.post(url, json={"prompt": "x", "max_tokens": 2})
        assert denied.status_code == 401 and denied.json() == {"error": "Unauthorized"}
        failed = httpx.post(url, json={"prompt": "x"}, headers={"authorization": "Bearer k1"})
        assert failed.status_code == 500 and failed.json()["error"]["type"] == "InternalServerError"
        assert httpx.get(f"{running.base_url}/health").status_code == 200


def test_sixty_four_concurrent_streams(sim: RunningSim) -> None:
    async def one(client: httpx.AsyncClient) -> int:
        body = {
            "model": "llama",
            "prompt": "go",
            "max_tokens": 40,
            "stream": True,
            "ignore_eos": True,
        }
        words = 0
        async with client.stream("POST", f"{sim.base_url}/v1/completions", json=body) as reply:
            async for line in reply.aiter_lines():
                if line.startswith("data: {"):
                    words += len(json.loads(line[6:])["choices"][0]["text"].split())
        return words

    async def all_streams() -> list[int]:
        async with httpx.AsyncClient(timeout=60) as client:
            return list(await asyncio.gather(*(one(client) for _ in range(64))))

    assert asyncio.run(all_streams()) == [40] * 64
    samples = _families(sim)
    assert samples["vllm:num_requests_running"][(("engine", "0"), ("model_name", "llama"))] == 0


def test_slow_start_then_crash_after_seconds() -> None:
    env = sim_env(
        SPECDECODE_SIM_TIME_SCALE="1",
        SPECDECODE_SIM_STARTUP_SECONDS="1",
        SPECDECODE_SIM_CRASH_AFTER_SECONDS="2",
    )
    with running_simulator(LLAMA_8B, env=env, wait_healthy=False) as running:
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{running.base_url}/health")  # still "loading": nothing listens
        wait_for_health(running.base_url, running.process, 15.0)
        assert running.process.wait(timeout=15) == 1
        assert "simulated crash" in running.stderr_text()
