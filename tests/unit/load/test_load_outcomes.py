"""Outcomes against a known truth: the reference engine fails, cuts and hangs a known set
of requests, and the client must record exactly those outcomes, stalls and counts."""

from __future__ import annotations

import asyncio
import time

import pytest
from loadtesting import GREEDY, wait_until

from specdecode.domain.latency_block import BLOCK_FIELDS, merge_values
from specdecode.domain.observations import LatencyBlock
from specdecode.domain.prompts import builtin_prompts
from specdecode.domain.sketch import Sketch, bucket_value
from specdecode_load import worker as worker_module
from specdecode_load.connection import MAX_EVENT_BYTES
from specdecode_load.pool import parse_endpoint
from specdecode_load.reference import Fault, ReferenceEngine, start_reference
from specdecode_load.schedule import worker_schedules
from specdecode_load.worker import LoadWorker, WorkerSpec

pytestmark = pytest.mark.unit

SEED = 3  # a request's seed is SEED + its index
TIMEOUT = 1.0
STEPS = [0.010, 0.030]  # the engine's step times: every true gap is at most ~30 ms


def _total(blocks: list[LatencyBlock]) -> LatencyBlock:
    merged = {f.name: merge_values(f.kind, blocks, f.name) for f in BLOCK_FIELDS}
    return LatencyBlock(start=0.0, seconds=0.0, **merged)


async def _run(
    engine: ReferenceEngine, requests: int | None, concurrency: int, seconds: float | None = None
) -> tuple[list[LatencyBlock], LoadWorker]:
    server, port, stepping = await start_reference(engine)
    (schedule,) = worker_schedules(0, 1, 1, requests, None)
    spec = WorkerSpec(
        worker=0,
        model="ref",
        seed=SEED,
        prompts=tuple(builtin_prompts("chat", 8, 3, 6, GREEDY)),
        schedule=schedule,
        concurrency=concurrency,
        request_rate=None,
        max_in_flight=16,
        request_timeout=TIMEOUT,
        block_seconds=0.5,
        endpoints=(parse_endpoint(f"http://127.0.0.1:{port}"),),
    )
    blocks: list[LatencyBlock] = []
    worker = LoadWorker(spec, lambda block, _: blocks.append(block))
    running = asyncio.ensure_future(worker.run(drain_seconds=5.0))
    try:
        if seconds is None:
            await wait_until(lambda: schedule.cap_reached and worker.in_flight == 0)
        else:
            await asyncio.sleep(seconds)  # a fixed span to count sends in (a rate)
    finally:
        worker.stop()
        await running
        stepping.cancel()
        server.close()
    return blocks, worker


async def test_recorded_outcomes_stalls_and_counts_are_exactly_the_injected_ones() -> None:
    faults = {
        SEED + 1: Fault("status", 503),
        SEED + 2: Fault("status", 429),
        SEED + 4: Fault("cut", 3),  # closes after 3+ tokens
        SEED + 5: Fault("cut", 0),  # closes before any token
        SEED + 7: Fault("hang", 2),  # stops after 2+ tokens, connection open
        SEED + 8: Fault("hang", 0),  # never sends a token
        SEED + 10: Fault("noseparator", MAX_EVENT_BYTES + 1000),
    }
    engine = ReferenceEngine(step_seconds=STEPS, max_tokens_per_step=2, keep_gaps=True)
    engine.faults = faults
    started = time.perf_counter()
    blocks, _ = await _run(engine, requests=12, concurrency=3)
    total = _total(blocks)
    assert sorted(seed for seed, _ in engine.requests) == [SEED + i for i in range(12)]
    assert total.requests_ok == 12 - len(faults)
    assert total.requests_failed == len(faults)
    assert total.failures == {
        "http_503": 1,
        "http_429": 1,
        "stream_cut": 2,
        "timeout": 2,
        "stream_error": 1,
    }
    assert total.slot_seconds.total == 12  # every request held a slot, whatever its end
    # every gap that arrived, plus one stall per failed request, nothing else
    assert total.chunks == len(engine.true_gaps)
    assert total.stalls == len(faults)
    assert total.per_chunk_itl.total == len(engine.true_gaps) + len(faults)
    # the two hangs are stalls of nearly the whole timeout; nothing else comes near
    stalls = sorted(
        (value, count) for value, count in _values(total.per_chunk_itl) if value > 0.5 * TIMEOUT
    )
    print(f"stalls over half the timeout: {stalls}")
    assert sum(count for _, count in stalls) == 2, stalls
    assert all(0.8 * TIMEOUT < value < 1.1 * TIMEOUT for value, _ in stalls), stalls
    # the hang after tokens and the cut after tokens have TPOT; the others had no token
    finished = 12 - len(faults)
    assert total.time_per_output_token.total == finished + 2
    assert total.accepted.requests == finished  # acceptance only from finished requests
    assert time.perf_counter() - started < 10 * TIMEOUT


def _values(sketch: Sketch) -> list[tuple[float, int]]:
    return [(bucket_value(index), count) for index, count in sketch.counts.items()]


async def test_a_failing_engine_is_not_hammered(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every request answered 500 at once, 2 streams for 2 s: with backoff a handful of
    # sends per second per stream; the control without backoff sends hundreds.
    engine = ReferenceEngine(step_seconds=STEPS, default_fault=Fault("status", 500))
    blocks, worker = await _run(engine, requests=None, concurrency=2, seconds=2.0)
    sent = len(engine.requests)
    assert _total(blocks).failures == {"http_500": sent}
    assert 2 <= sent <= 2 * 2 * 5, sent
    assert engine.connections <= 2  # retried on its keep-alive connection, not a new one
    assert worker.backoff.failures == sent

    monkeypatch.setattr(worker_module, "BACKOFF_BASE_SECONDS", 0.0)
    control = ReferenceEngine(step_seconds=STEPS, default_fault=Fault("status", 500))
    await _run(control, requests=None, concurrency=2, seconds=2.0)
    print(
        f"500 at once, 2 streams, 2 s: {sent} sends with backoff, {len(control.requests)} without"
    )
    assert len(control.requests) > 10 * sent, (len(control.requests), sent)


def test_backoff_is_exponential_capped_jittered_and_seeded() -> None:
    first, again = worker_module.Backoff(7), worker_module.Backoff(7)
    delays = [first.failed() for _ in range(10)]
    assert delays == [again.failed() for _ in range(10)]  # seeded: reproducible
    for n, delay in enumerate(delays):
        ceiling = min(worker_module.BACKOFF_CAP_SECONDS, 0.1 * 2**n)
        assert ceiling / 2 <= delay <= ceiling
    assert len(set(delays[-4:])) == 4  # jittered at the cap, not one fixed value
    first.succeeded()
    assert first.failed() <= 0.1
