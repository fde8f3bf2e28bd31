"""The simulator's hang fault: a share of streamed requests stop streaming without closing."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest
from simtesting import LLAMA_8B, running_simulator, sim_env

from specdecode_sim.server import HANG_WITHIN_CHUNKS, ServerRuntime, hang_draw
from specdecode_sim.settings import Faults, SettingsError, load_settings

pytestmark = pytest.mark.unit


def _runtime(rate: float, seed: int, **faults: Any) -> ServerRuntime:
    engine = SimpleNamespace(core=SimpleNamespace(running=[], waiting=[]))
    return cast(
        ServerRuntime,
        SimpleNamespace(
            faults=Faults(hang_rate=rate, **faults),
            fault_rng=random.Random(seed),
            engine=engine,
            hang_load_reached_at=None,
        ),
    )


def test_the_hang_draw_is_seeded_and_hangs_its_share() -> None:
    runtime, again = _runtime(0.1, 7), _runtime(0.1, 7)
    first = [hang_draw(runtime) for _ in range(5000)]
    assert first == [hang_draw(again) for _ in range(5000)]  # the same seed, the same hangs
    hung = [chunks for chunks in first if chunks is not None]
    assert 0.09 < len(hung) / len(first) < 0.11  # 10 %: 500 expected, sd 21
    assert set(hung) == set(range(1, HANG_WITHIN_CHUNKS + 1))
    assert all(hang_draw(_runtime(0.0, s)) is None for s in range(50))


def test_the_hang_rate_is_read_from_the_environment_and_bounded() -> None:
    assert load_settings({"SPECDECODE_SIM_HANG_RATE": "0.05"}).faults.hang_rate == 0.05
    assert load_settings({}).faults.hang_rate == 0.0
    with pytest.raises(SettingsError, match="HANG_RATE"):
        load_settings({"SPECDECODE_SIM_HANG_RATE": "1.5"})
    late = load_settings(
        {
            "SPECDECODE_SIM_HANG_FROM_LOAD": "16",
            "SPECDECODE_SIM_HANG_DELAY_SECONDS": "35",
            "SPECDECODE_SIM_HANG_BEFORE_FIRST_TOKEN": "1",
        }
    ).faults
    assert (late.hang_from_load, late.hang_delay_seconds, late.hang_before_first_token) == (
        16,
        35.0,
        True,
    )
    with pytest.raises(SettingsError, match="HANG_DELAY_SECONDS"):
        load_settings({"SPECDECODE_SIM_HANG_DELAY_SECONDS": "-1"})


def test_hangs_start_only_under_load_and_after_the_delay() -> None:
    # Armed when the engine first holds 16 requests (this one included), hanging 35 s later:
    # a fault that starts inside a high-concurrency stage's measured window.
    runtime = _runtime(1.0, 3, hang_from_load=16, hang_delay_seconds=35.0)
    core: Any = runtime.engine.core  # the namespace standing in for the engine core
    core.running = [object()] * 4  # a 4-stream stage: never armed
    assert all(hang_draw(runtime, now=t) is None for t in range(0, 500, 5))
    assert runtime.hang_load_reached_at is None
    core.running = [object()] * 15  # the 16th request arms it
    assert hang_draw(runtime, now=1000.0) is None and runtime.hang_load_reached_at == 1000.0
    core.running = []  # once armed, the load no longer matters; the delay does
    assert hang_draw(runtime, now=1034.9) is None
    assert hang_draw(runtime, now=1035.0) is not None
    # control: without the two knobs the first request may hang
    assert hang_draw(_runtime(1.0, 3), now=0.0) is not None


def test_a_late_start_hangs_before_the_first_token() -> None:
    runtime = _runtime(1.0, 5, hang_before_first_token=True)
    assert [hang_draw(runtime, now=0.0) for _ in range(20)] == [0] * 20


def test_a_hung_stream_stops_after_a_few_chunks_and_stays_open() -> None:
    env = sim_env(SPECDECODE_SIM_TIME_SCALE="0.05", SPECDECODE_SIM_HANG_RATE="1")
    body = {"model": LLAMA_8B, "prompt": "go", "max_tokens": 200, "stream": True}
    body["ignore_eos"] = True

    async def read_until_silent() -> tuple[int, bool]:
        chunks = 0
        async with (
            httpx.AsyncClient(timeout=30) as client,
            client.stream("POST", f"{running.base_url}/v1/completions", json=body) as reply,
        ):
            lines = reply.aiter_lines()
            while True:
                try:
                    line = await asyncio.wait_for(lines.__anext__(), timeout=2.0)
                except TimeoutError:
                    return chunks, True  # silent for 2 s with the connection open
                except StopAsyncIteration:
                    return chunks, False  # the stream ended
                if line.startswith("data: {"):
                    chunks += 1

    with running_simulator(LLAMA_8B, env=env) as running:
        chunks, silent = asyncio.run(read_until_silent())
        # 200 tokens at 1/20 of real time take well under 2 s: silence is the hang
        assert silent and 1 <= chunks <= HANG_WITHIN_CHUNKS, chunks
        # the engine still answers other requests (a hang is one stream's, not the engine's)
        assert httpx.get(f"{running.base_url}/health").status_code == 200
        running.process.terminate()
        running.process.wait(timeout=10)
        assert "simulated hang 1 at " in running.stderr_text()


def test_a_late_start_opens_the_stream_and_sends_no_token() -> None:
    env = sim_env(
        SPECDECODE_SIM_TIME_SCALE="0.05",
        SPECDECODE_SIM_HANG_RATE="1",
        SPECDECODE_SIM_HANG_BEFORE_FIRST_TOKEN="1",
    )
    body = {"model": LLAMA_8B, "prompt": "go", "max_tokens": 200, "stream": True}

    async def status_and_chunks() -> tuple[int, int]:
        chunks = 0
        async with (
            httpx.AsyncClient(timeout=30) as client,
            client.stream("POST", f"{running.base_url}/v1/completions", json=body) as reply,
        ):
            lines = reply.aiter_lines()
            while True:
                try:
                    line = await asyncio.wait_for(lines.__anext__(), timeout=2.0)
                except (TimeoutError, StopAsyncIteration):
                    return reply.status_code, chunks
                if line.startswith("data: {"):
                    chunks += 1

    with running_simulator(LLAMA_8B, env=env) as running:
        # the headers came (200, an open stream), and no token in 2 s
        assert asyncio.run(status_and_chunks()) == (200, 0)
        running.process.terminate()
        running.process.wait(timeout=10)
        assert "stops streaming after 0 chunks" in running.stderr_text()
