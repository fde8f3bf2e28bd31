"""The client against a loopback reference engine whose true gaps are known per chunk."""

from __future__ import annotations

import asyncio
import time

import pytest
from loadtesting import GREEDY, wait_until

from specdecode.domain.observations import LatencyBlock
from specdecode.domain.prompts import builtin_prompts
from specdecode_load.connection import StreamConnection
from specdecode_load.pool import Endpoint, parse_endpoint
from specdecode_load.reference import ReferenceEngine, start_reference
from specdecode_load.schedule import WorkerSchedule, worker_schedules
from specdecode_load.worker import LoadWorker, WorkerSpec

pytestmark = pytest.mark.unit


async def run_against_reference(
    concurrency: int | None, max_requests: int, max_tokens: int, rate: float | None = None
) -> tuple[ReferenceEngine, list[float], list[LatencyBlock], LoadWorker]:
    engine = ReferenceEngine(step_seconds=[0.010, 0.030], max_tokens_per_step=3, keep_gaps=True)
    server, port, stepping = await start_reference(engine)
    (schedule,) = worker_schedules(0, 1, 1, max_requests, None)
    spec = WorkerSpec(
        worker=0,
        model="ref",
        seed=3,
        prompts=tuple(builtin_prompts("chat", 8, 3, max_tokens, GREEDY)),
        schedule=schedule,
        concurrency=concurrency,
        request_rate=rate,
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


def open_loop_worker(
    endpoint: Endpoint,
    rate: float,
    max_requests: int | None,
    max_in_flight: int,
    max_tokens: int = 4,
) -> tuple[WorkerSchedule, LoadWorker, list[LatencyBlock]]:
    """One open-loop worker on `endpoint` (short chat answers), collecting its blocks."""
    (schedule,) = worker_schedules(0, 1, 1, max_requests, None)
    prompts = tuple(builtin_prompts("chat", 8, 3, max_tokens, GREEDY))
    spec = WorkerSpec(
        worker=0, model="ref", seed=3, prompts=prompts,
        schedule=schedule, concurrency=None, request_rate=rate, max_in_flight=max_in_flight,
        request_timeout=30.0, block_seconds=0.5, endpoints=(endpoint,),
    )  # fmt: skip
    blocks: list[LatencyBlock] = []
    return schedule, LoadWorker(spec, lambda block, _: blocks.append(block)), blocks


async def test_measured_gaps_are_within_a_millisecond_of_the_truth() -> None:
    engine, measured, blocks, _ = await run_against_reference(1, 4, 15)
    assert len(measured) == len(engine.true_gaps) >= 4 * 4  # >= 5 chunks per request
    errors = sorted(abs(m - t) for m, t in zip(measured, engine.true_gaps, strict=True))
    # Pairwise, in order. A shared machine may preempt this process between the engine's
    # write and the client's read; such a stall shows in a gap or two, not in most.
    assert errors[int(0.9 * len(errors))] < 0.001, errors
    # both gap sizes of the schedule show up (the test can tell 10 ms from 30 ms)
    assert min(measured) < 0.02 < max(measured)
    assert sum(b.requests_ok for b in blocks) == 4
    assert sum(b.output_tokens for b in blocks) == 4 * 15
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


async def test_a_worker_without_streams_still_ships_and_stops() -> None:
    """More processes than streams leaves a worker with none: it must not crash."""
    (schedule,) = worker_schedules(0, 1, 1, None, None)
    spec = WorkerSpec(
        worker=1, model="ref", seed=0, prompts=tuple(builtin_prompts("chat", 2, 0, 4, GREEDY)),
        schedule=schedule, concurrency=0, request_rate=None, max_in_flight=1,
        request_timeout=5.0, block_seconds=0.5,
    )  # fmt: skip
    blocks: list[LatencyBlock] = []
    worker = LoadWorker(spec, lambda block, _: blocks.append(block))
    running = asyncio.ensure_future(worker.run(drain_seconds=1.0))
    await wait_until(lambda: worker.waiting_for_endpoints)
    worker.stop()
    await running
    assert len(blocks) == 1 and blocks[0].requests_ok == 0 and schedule.sent == 0


async def test_open_loop_sends_its_budget_at_the_seeded_rate() -> None:
    engine, _, blocks, worker = await run_against_reference(None, 6, 4, rate=200.0)
    assert worker.schedule.sent == 6 and sum(b.requests_ok for b in blocks) == 6
    assert engine.connections >= 1
    assert sum(b.arrivals_skipped for b in blocks) == 0  # on time: nothing dropped


async def test_a_starved_open_loop_reports_the_arrivals_it_skipped() -> None:
    """The loop is blocked for 2 s at 50 requests/s: the arrivals over a second old when it
    wakes (about 50) are skipped and reported, not sent as one burst nor lost silently."""
    asyncio.get_running_loop().call_later(0.3, time.sleep, 2.0)  # the fault, not a wait
    _, _, blocks, worker = await run_against_reference(None, 100, 4, rate=50.0)
    skipped = sum(b.arrivals_skipped for b in blocks)
    assert worker.schedule.sent == 100 and sum(b.requests_ok for b in blocks) == 100
    assert 20 <= skipped <= 120, skipped  # Poisson around 50, more if the loop lagged again


async def test_time_without_engine_endpoints_is_not_counted_as_skipped() -> None:
    """Engine pods not Ready (endpoints withdrawn for 2 s mid-run): nothing to send to is
    not the sender falling behind; it starts its schedule over instead (a hostile review
    measured 43 arrivals of a 3 s outage counted as skipped before)."""
    engine = ReferenceEngine(step_seconds=[0.010], max_tokens_per_step=3)
    server, port, stepping = await start_reference(engine)
    endpoint = parse_endpoint(f"http://127.0.0.1:{port}")
    schedule, worker, blocks = open_loop_worker(endpoint, 20.0, None, 64)
    running = asyncio.ensure_future(worker.run(drain_seconds=2.0))
    try:
        await wait_until(lambda: schedule.sent >= 10)
        worker.set_endpoints([])
        await asyncio.sleep(2.0)  # the outage's length, not a wait for a condition
        worker.set_endpoints([endpoint])
        sent_after_outage = schedule.sent + 10
        await wait_until(lambda: schedule.sent >= sent_after_outage)
    finally:
        worker.stop()
        await running
        stepping.cancel()
        server.close()
    # Every request sent is accounted for (one launched as the endpoints went may fail).
    assert sum(b.requests_ok + b.requests_failed for b in blocks) == schedule.sent >= 20
    assert sum(b.arrivals_skipped for b in blocks) == 0


async def test_a_send_launched_as_the_endpoints_go_is_recorded_as_a_failure() -> None:
    """An open-loop send is launched, then runs: endpoints withdrawn in between (engine
    pods no longer Ready) left it nothing to connect to. It ends as a recorded connect
    failure; it had vanished with a ZeroDivisionError no one read (a CI run lost one)."""
    engine = ReferenceEngine(step_seconds=[0.010], max_tokens_per_step=3)
    server, port, stepping = await start_reference(engine)
    endpoint = parse_endpoint(f"http://127.0.0.1:{port}")
    schedule, worker, blocks = open_loop_worker(endpoint, 50.0, 12, 64)
    issue = schedule.next_index

    def withdrawn_after_the_sixth() -> int | None:
        index = issue()
        if schedule.sent == 6:
            worker.set_endpoints([])  # after the launch decision, before the send runs
        return index

    schedule.next_index = withdrawn_after_the_sixth  # type: ignore[method-assign]
    running = asyncio.ensure_future(worker.run(drain_seconds=2.0))
    try:
        await wait_until(lambda: worker.waiting_for_endpoints and worker.in_flight == 0)
        worker.set_endpoints([endpoint])
        await wait_until(lambda: schedule.cap_reached and worker.in_flight == 0)
    finally:
        worker.stop()
        await running
        stepping.cancel()
        server.close()
    assert sum(b.requests_failed for b in blocks) == 1
    assert sum(b.requests_ok for b in blocks) == 11 and schedule.sent == 12


def test_arrivals_are_the_same_on_both_sides() -> None:
    from specdecode_load.schedule import arrival_gaps

    a, b = arrival_gaps(7, 0, 1, 5.0), arrival_gaps(7, 0, 1, 5.0)
    gaps = [a.expovariate(5.0) for _ in range(100)]
    assert gaps == [b.expovariate(5.0) for _ in range(100)]
    assert 0.1 < sum(gaps) / len(gaps) < 0.3  # mean 1/rate = 0.2 s
    other = arrival_gaps(7, 0, 2, 5.0)  # another worker: its own clock
    assert gaps != [other.expovariate(5.0) for _ in range(100)]


async def test_an_open_loop_catching_up_keeps_to_its_in_flight_limit() -> None:
    """A loop woken 2 s late at 100 requests/s launches its second's backlog at once; the
    sends it launched count against `max_in_flight` before they run (a hostile review
    measured 193 in flight at a limit of 4 when only running sends counted)."""
    engine = ReferenceEngine(step_seconds=[0.010], max_tokens_per_step=1)
    server, port, stepping = await start_reference(engine)
    endpoint = parse_endpoint(f"http://127.0.0.1:{port}")
    schedule, worker, _ = open_loop_worker(endpoint, 100.0, 150, 4, max_tokens=8)
    peak = 0
    acquire = worker.pool.acquire

    async def counting_acquire() -> StreamConnection:
        nonlocal peak
        peak = max(peak, worker.in_flight)
        return await acquire()

    worker.pool.acquire = counting_acquire  # type: ignore[method-assign]
    asyncio.get_running_loop().call_later(0.2, time.sleep, 2.0)  # the fault, not a wait
    running = asyncio.ensure_future(worker.run(drain_seconds=5.0))
    try:
        await wait_until(lambda: schedule.cap_reached and worker.in_flight == 0)
    finally:
        worker.stop()
        await running
        stepping.cancel()
        server.close()
    assert schedule.sent == 150
    assert 1 < peak <= 4, peak
