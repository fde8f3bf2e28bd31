"""Where the burst floor can sit: chunk-gap shares under candidate floors, healthy and held.

The real load client (`LoadWorker`) reads (a) two reference engines per run, seeded, 5 and
10 ms steps, healthy (A/A) or one holding whole answers and releasing them
`release_spacing` apart (the bypass: a sender stepping over a 0.1 ms floor), and (b) the
simulator at real time (its default H100 profile, Llama-3.1-8B, plain or EAGLE-3), a
subprocess. Per run: the side's chunk gaps, and the share under 0.1, 0.5 and 1 ms and
under 1/20 of the side's own median gap, as `domain/bursts.burst_gaps` counts them.

    .venv/bin/python benchmarks/burst_floor.py [--seeds 10] [--streams 8 64] [--sim]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from specdecode.domain.observations import LatencyBlock
from specdecode.domain.prompts import SamplingDefaults, builtin_prompts
from specdecode.domain.sketch import Sketch, bucket_index
from specdecode_load.pool import parse_endpoint
from specdecode_load.reference import ReferenceEngine, start_reference
from specdecode_load.schedule import worker_schedules
from specdecode_load.worker import LoadWorker, WorkerSpec

REPO = Path(__file__).resolve().parents[1]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
GREEDY = SamplingDefaults(temperature=0.0, top_p=1.0)
FLOORS = (1e-4, 5e-4, 1e-3)
EAGLE3 = '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'  # noqa: E501


def under(gaps: Sketch, floor: float) -> int:
    """Gaps in buckets wholly below the floor's bucket (as `burst_gaps` counts)."""
    edge = bucket_index(floor)
    return sum(count for index, count in gaps.counts.items() if index < edge)


async def read(
    port: int, streams: int, seed: int, tokens: int, requests: int, model: str = "ref"
) -> Sketch:
    """One load worker's per-chunk gaps over `requests` requests at `streams` in flight."""
    (schedule,) = worker_schedules(0, 1, 1, requests, None)
    spec = WorkerSpec(
        worker=0, model=model, seed=seed,
        prompts=tuple(builtin_prompts("chat", 16, seed, tokens, GREEDY)),
        schedule=schedule, concurrency=streams, request_rate=None, max_in_flight=streams,
        request_timeout=60.0, block_seconds=0.5,
        endpoints=(parse_endpoint(f"http://127.0.0.1:{port}"),),
    )  # fmt: skip
    blocks: list[LatencyBlock] = []
    worker = LoadWorker(spec, functools.partial(lambda into, b, _: into.append(b), blocks))
    running = asyncio.ensure_future(worker.run(drain_seconds=10.0))
    while not (worker.schedule.cap_reached and worker.in_flight == 0):  # noqa: ASYNC110 (a poll)
        await asyncio.sleep(0.05)
    worker.stop()
    await running
    gaps = Sketch()
    for block in blocks:
        gaps.merge(block.per_chunk_itl)
    return gaps


async def reference(streams: int, seed: int, spacing: float, tokens: int) -> Sketch:
    """A reference engine's gaps as read; `spacing` > 0: whole answers held, then spaced."""
    engine = ReferenceEngine(
        step_seconds=[0.005, 0.010], seed=seed, burst_every=1000 if spacing else 0,
        release_spacing=spacing,
    )  # fmt: skip
    server, port, stepping = await start_reference(engine)
    try:
        return await read(port, streams, seed, tokens, 8 * streams)
    finally:
        stepping.cancel()
        server.close()


def row(source: str, streams: int, gaps: Sketch) -> str:
    """One table row: totals and shares under each floor and under median/20."""
    total = gaps.total
    median = gaps.quantile(0.5)
    cells = [f"{under(gaps, floor)} ({under(gaps, floor) / total:.2%})" for floor in FLOORS]
    relative = under(gaps, median / 20)
    return (
        f"| {source} | {streams} | {total} | {median * 1000:.2f} | " + " | ".join(cells)
        + f" | {relative} ({relative / total:.2%}) |"
    )  # fmt: skip


def simulator(method: str | None) -> tuple[subprocess.Popen[bytes], int]:
    """The simulator at real time on a free port, healthy."""
    port = 18000 + os.getpid() % 1000
    flags = ["--speculative-config", method] if method else []
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECDECODE_SIM_")}
    env["PYTHONPATH"] = str(REPO / "engine-image")
    process = subprocess.Popen(
        [sys.executable, "-m", "specdecode_sim.cli", "serve", MODEL,
         *flags, "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                return process, port
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    process.kill()
    raise SystemExit("simulator not healthy")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--streams", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--spacings", type=float, nargs="*", default=[1.5e-4, 3e-4, 5e-4])
    parser.add_argument("--sim", action="store_true", help="also the simulator at real time")
    parser.add_argument("--no-reference", action="store_true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| source | streams | gaps | median ms | < 0.1 ms | < 0.5 ms | < 1 ms | < median/20 |")
    print("|---|---|---|---|---|---|---|---|")
    for streams in [] if args.no_reference else args.streams:
        for seed in range(1, args.seeds + 1):
            gaps = await reference(streams, seed, 0.0, args.tokens)
            print(row(f"reference A/A seed {seed}", streams, gaps), flush=True)
        for spacing in args.spacings:
            gaps = await reference(streams, 1, spacing, args.tokens)
            print(row(f"reference, whole answers released {spacing * 1000:g} ms apart",
                      streams, gaps), flush=True)  # fmt: skip
    if args.sim:
        for name, method in (("plain", None), ("EAGLE-3", EAGLE3)):
            process, port = simulator(method)
            try:
                for streams in args.streams:
                    for seed in range(1, args.seeds + 1):
                        gaps = await read(port, streams, seed, args.tokens, 4 * streams, MODEL)
                        print(row(f"simulator {name} seed {seed}", streams, gaps), flush=True)
            finally:
                process.terminate()
                process.wait(timeout=10)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
