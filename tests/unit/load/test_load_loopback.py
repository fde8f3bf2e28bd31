"""The client against a loopback reference engine whose true gaps are known per chunk."""

from __future__ import annotations

import asyncio

import pytest
from loadtesting import wait_until

from specdecode.domain.observations import LatencyBlock
from specdecode.domain.prompts import builtin_prompts
from specdecode_load.pool import parse_endpoint
from specdecode_load.reference import ReferenceEngine, start_reference
from specdecode_load.schedule import worker_schedules
from specdecode_load.worker import LoadWorker, WorkerSpec

pytestmark = pytest.mark.unit


async def run_against_reference(
    concurrency: int, max_requests: int, max_tokens: int
) -> tuple[ReferenceEngine, list[float], list[LatencyBlock], LoadWorker]:
    engine = ReferenceEngine(step_seconds=[0.010, 0.030], max_tokens_per_step=3, keep_gaps=True)
    server, port, stepping = await start_reference(engine)
    (schedule,) = worker_schedules(0, 1, 1, max_requests, None)
    spec = WorkerSpec(
        worker=0,
        model="ref",
        seed=3,
        prompts=tuple(builtin_prompts("chat", 8, 3, max_tokens)),
        schedule=schedule,
        concurrency=concurrency,
        request_rate=None,
        max_in_flight=16,
        request_timeout=30.0,
        block_seconds=0.5,
        endpoints=(parse_endpoint(f"http://127.0.0.1:{port}"),),
    )
    blocks: list[LatencyBlock] = []
    worker = LoadWorker(spec, lambda block, _: blocks.append(block))
    measured: list[float] = []
    record = worker.recorder.chunk_gap

    def spy(now: float, gap: float, tokens: int, merged: bool) -> None:
        measured.append(gap)
        record(now, gap, tokens, merged)

    worker.recorder.chunk_gap = spy  # type: ignore[method-assign]
    running = asyncio.ensure_future(worker.run(drain_seconds=5.0))
    try:
        await wait_until(
            lambda: schedule.cap_reached and worker.in_flight == 0 and not engine.streams
        )
    finally:
        worker.stop()
        await running
        stepping.cancel()
        server.close()
    return engine, measured, blocks, worker


async def test_measured_gaps_are_within_a_millisecond_of_the_truth() -> None:
    engine, measured, blocks, _ = await run_against_reference(1, 3, 12)
    assert len(measured) == len(engine.true_gaps) >= 3 * 3  # >= 4 chunks per request
    errors = [abs(m - t) for m, t in zip(measured, engine.true_gaps, strict=True)]
    assert max(errors) < 0.001, errors
    # both gap sizes of the schedule show up (the test can tell 10 ms from 30 ms)
    assert min(measured) < 0.02 < max(measured)
    assert sum(b.requests_ok for b in blocks) == 3
    assert sum(b.output_tokens for b in blocks) == 3 * 12
    assert sum(b.requests_failed for b in blocks) == 0


async def test_cap_stops_sending_and_connections_are_reused() -> None:
    engine, _, blocks, worker = await run_against_reference(2, 5, 6)
    assert worker.schedule.sent == 5 and worker.schedule.cap_reached
    assert sum(b.requests_ok for b in blocks) == 5
    assert sum(b.accepted.requests for b in blocks) == 5
    starts = [b.start for b in blocks]
    assert starts == sorted(starts) and all(s % 0.5 == 0 for s in starts)
    # two streams, keep-alive: one connection each, not one per request
    assert engine.connections == 2
