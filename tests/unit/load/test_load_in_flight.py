"""Requests in flight against a known truth: the reference engine hangs a known request,
and every block after its last token must list it with an open gap that grows by the
block length, and the block shipped at shutdown must still list it (not drop it)."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from loadtesting import GREEDY, wait_until

from specdecode.domain.in_flight import OpenRequest
from specdecode.domain.observations import LatencyBlock
from specdecode.domain.prompts import builtin_prompts
from specdecode_load.connection import StreamConnection
from specdecode_load.pool import parse_endpoint
from specdecode_load.recorder import BlockRecorder
from specdecode_load.reference import Fault, ReferenceEngine, start_reference
from specdecode_load.schedule import worker_schedules
from specdecode_load.worker import LoadWorker, WorkerSpec

pytestmark = pytest.mark.unit

SEED = 5
TIMEOUT = 30.0  # far longer than the test: the hang is still in flight when the pod stops
BLOCK = 0.25


async def _hang_then_stop(hold: float) -> tuple[list[LatencyBlock], float]:
    """One stream; its third request hangs after 2 tokens; the worker stops `hold` seconds
    after the hang began. The blocks, and the monotonic time the stop began."""
    engine = ReferenceEngine(step_seconds=[0.01, 0.02], max_tokens_per_step=2)
    engine.faults = {SEED + 2: Fault("hang", 2)}
    server, port, stepping = await start_reference(engine)
    (schedule,) = worker_schedules(0, 1, 1, None, None)
    spec = WorkerSpec(
        worker=0,
        model="ref",
        seed=SEED,
        prompts=tuple(builtin_prompts("chat", 8, 3, 6, GREEDY)),
        schedule=schedule,
        concurrency=1,
        request_rate=None,
        max_in_flight=4,
        request_timeout=TIMEOUT,
        block_seconds=BLOCK,
        endpoints=(parse_endpoint(f"http://127.0.0.1:{port}"),),
    )
    blocks: list[LatencyBlock] = []
    worker = LoadWorker(spec, lambda block, _: blocks.append(block))
    running = asyncio.ensure_future(worker.run(drain_seconds=0.2))
    try:
        await wait_until(lambda: len(engine.requests) == 3)  # the hanging one was sent
        await asyncio.sleep(hold)
    finally:
        stopped = time.perf_counter()
        worker.stop()
        await running
        stepping.cancel()
        server.close()
    return blocks, stopped


async def test_a_hung_request_is_in_every_blocks_snapshot_and_in_the_last_one() -> None:
    blocks, _ = await _hang_then_stop(hold=1.5)
    # one stream: every block's snapshot lists one request (in the steps' 10-20 ms gaps,
    # or the hung one); the blocks after the hang list it with a gap past any step's
    assert all(b.in_flight is not None and b.in_flight.count == 1 for b in blocks)
    listed = [
        b for b in blocks if b.in_flight is not None and b.in_flight.longest[0].open_gap > 0.1
    ]
    assert len(listed) >= 1.5 / BLOCK - 1, [b.in_flight for b in blocks]
    gaps = [b.in_flight.longest[0].open_gap for b in listed if b.in_flight is not None]
    ages = [b.in_flight.longest[0].age for b in listed if b.in_flight is not None]
    print(f"open gaps at block ends: {[round(g, 3) for g in gaps]}")
    # the open gap grows by one block per block (the last block closes early, at the stop)
    steps = [later - earlier for earlier, later in itertools.pairwise(gaps[:-1])]
    assert all(abs(step - BLOCK) < 0.03 for step in steps), steps
    # age minus open gap is the time from the send to its last token: the same in each
    sent_to_last = [age - gap for age, gap in zip(ages, gaps, strict=True)]
    assert max(sent_to_last) - min(sent_to_last) < 0.005, sent_to_last
    # the pod stopped 1.5 s after the send (+ the drain): the last block still lists it
    last = blocks[-1].in_flight
    assert last is not None and last.count == 1 and last.timeout == TIMEOUT
    assert 1.5 < last.longest[0].age < 1.5 + 0.2 + 0.3, last
    # ... and the hang never ended in a block: it is not counted twice
    assert sum(b.requests_failed for b in blocks) == 0


async def test_requests_that_end_are_not_in_flight() -> None:
    blocks, _ = await _hang_then_stop(hold=0.6)
    # the two requests before the hang ended in blocks, and no snapshot lists them after
    assert sum(b.requests_ok for b in blocks) == 2
    ended = max(i for i, b in enumerate(blocks) if b.requests_ok)
    after = [b.in_flight for b in blocks[ended:]]
    assert all(s is not None and s.count == 1 and s.longest[0].age < 0.9 for s in after), after


def test_an_open_gap_is_never_longer_than_known() -> None:
    recorder = BlockRecorder(1.0, lambda block: None)
    connection = StreamConnection(recorder, "http://127.0.0.1:1")
    assert connection.open_request(10.0) is None  # nothing sent
    loop = asyncio.new_event_loop()
    connection._future = loop.create_future()
    connection._started, connection._first_at, connection._last_at = 5.0, -1.0, 0.0
    assert connection.open_request(4.0) is None  # sent after the snapshot's time
    assert connection.open_request(8.0) == OpenRequest(3.0, 3.0)  # no token yet: since send
    connection._first_at, connection._last_at = 6.0, 7.0
    assert connection.open_request(9.0) == OpenRequest(4.0, 2.0)  # since its last chunk
    assert connection.open_request(5.5) == OpenRequest(0.5, 0.5)  # first token came later
    # a chunk arrived after the snapshot's time: the gap then is unknown, none is counted
    # (never the whole age, which would turn a streaming request into a stall)
    assert connection.open_request(6.5) == OpenRequest(1.5, 0.0)
    loop.close()
