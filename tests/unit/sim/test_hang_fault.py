"""The simulator's hang fault: a share of streamed requests stop streaming without closing."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import cast

import httpx
import pytest
from simtesting import LLAMA_8B, running_simulator, sim_env

from specdecode_sim.server import HANG_WITHIN_CHUNKS, ServerRuntime, hang_draw
from specdecode_sim.settings import Faults, SettingsError, load_settings

pytestmark = pytest.mark.unit


def _runtime(rate: float, seed: int) -> ServerRuntime:
    return cast(
        ServerRuntime,
        SimpleNamespace(faults=Faults(hang_rate=rate), fault_rng=random.Random(seed)),
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
