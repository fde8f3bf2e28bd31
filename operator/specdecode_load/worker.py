"""One measuring loop: a worker's streams, its recorder and nothing else.

Why one loop per process with nothing else on it: a chunk's timestamp is late by however
long the loop was busy when the bytes arrived, so the loop that stamps chunks does only
the I/O of its own streams. Reports, JSON, persistence and HTTP serving live in the pod's
main process (`specdecode_load.main`); this module can also run inside another loop
(tests, benchmarks) through `LoadWorker`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from specdecode.domain.in_flight import InFlight
from specdecode.domain.observations import LatencyBlock
from specdecode.domain.prompts import ShadowRequest
from specdecode.domain.traffic_groups import group_keys
from specdecode_load.connection import CONNECT_ERROR, StreamConnection, request_bytes
from specdecode_load.pool import ConnectionPool, Endpoint
from specdecode_load.recorder import BlockRecorder
from specdecode_load.schedule import WorkerSchedule, arrival_gaps, next_arrival, prompt_choice

# After a failed request (or connection) a stream waits before its next send, so a failing
# engine is not hammered: min(cap, base * 2^(failures in a row - 1)), half of it jittered
# (seeded per worker). Pacing, not a condition wait; one success resets it.
BACKOFF_BASE_SECONDS = 0.1
BACKOFF_CAP_SECONDS = 5.0


class Backoff:
    """Capped, jittered exponential backoff over a worker's failures in a row."""

    def __init__(self, seed: int, base: float | None = None) -> None:
        self._rng = random.Random(seed)
        self._base = BACKOFF_BASE_SECONDS if base is None else base
        self.failures = 0

    def succeeded(self) -> None:
        """A request streamed to the end: the next failure starts from the base again."""
        self.failures = 0

    def failed(self) -> float:
        """Seconds to wait before this stream's next send."""
        self.failures += 1
        ceiling = min(BACKOFF_CAP_SECONDS, self._base * 2.0 ** min(self.failures - 1, 30))
        return ceiling / 2 + self._rng.uniform(0.0, ceiling / 2)


@dataclass(frozen=True)
class WorkerSpec:
    """Everything one worker needs (picklable: it crosses into the worker process)."""

    worker: int
    model: str
    seed: int
    prompts: tuple[ShadowRequest, ...]
    schedule: WorkerSchedule
    concurrency: int | None  # closed loop: this worker's streams
    request_rate: float | None  # open loop: this worker's share of the arrival rate
    max_in_flight: int
    request_timeout: float
    block_seconds: float
    endpoints: tuple[Endpoint, ...] = ()


ShipMessage = Callable[[LatencyBlock, "LoadWorker"], None]


class LoadWorker:
    """Sends one worker's share of the load and records it block by block."""

    def __init__(
        self,
        spec: WorkerSpec,
        ship: ShipMessage,
        connection_class: type[StreamConnection] = StreamConnection,  # benchmarks hook it
    ) -> None:
        self.spec = spec
        self.schedule = spec.schedule
        self.recorder = BlockRecorder(spec.block_seconds, lambda block: ship(block, self))
        self.pool = ConnectionPool(self.recorder, list(spec.endpoints), connection_class)
        self.recorder.probe_in_flight = lambda at: InFlight.of(
            self.pool.open_requests(at), spec.request_timeout
        )
        self.in_flight = 0
        self._stopping = asyncio.Event()
        self._slot_free = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self.backoff = Backoff(spec.seed * 1_000_003 + spec.schedule.shard * 1_009 + spec.worker)
        self.groups = group_keys(spec.prompts)  # each prompt's traffic group, bounded

    @property
    def waiting_for_endpoints(self) -> bool:
        """True while no engine endpoint is known (nothing is sent)."""
        return not self.pool.ready.is_set()

    def set_endpoints(self, endpoints: list[Endpoint]) -> None:
        """The operator pushed a new endpoint list."""
        self.pool.set_endpoints(endpoints)

    def stop(self) -> None:
        """Stop sending; `run` returns once in-flight requests end (or the drain ends)."""
        self._stopping.set()

    async def run(self, drain_seconds: float) -> None:
        """Drive the load until `stop`, then drain, ship the last block and close."""
        self._arm_boundary_timer()
        if self.spec.concurrency is not None:
            senders = [self._closed_stream() for _ in range(self.spec.concurrency)]
        else:
            senders = [self._open_loop()]
        tasks = [asyncio.ensure_future(s) for s in senders]
        await self._stopping.wait()
        done, pending = (
            await asyncio.wait(tasks, timeout=drain_seconds) if tasks else (set(), set())
        )
        for task in pending:
            task.cancel()
        if self._timer is not None:
            self._timer.cancel()
        # ship what was measured, with what is still in flight (its snapshot), then abort
        self.recorder.roll(time.perf_counter())
        self.pool.close_all()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            task.result()

    def _arm_boundary_timer(self) -> None:
        delay = max(self.recorder.block_end - time.perf_counter(), 0.0) + 0.001
        self._timer = asyncio.get_running_loop().call_later(delay, self._on_boundary)

    def _on_boundary(self) -> None:
        now = time.perf_counter()
        if now >= self.recorder.block_end:
            self.recorder.roll(now)
        self._arm_boundary_timer()

    async def _wait_to_send(self) -> bool:
        """Wait for endpoints; False once stopping."""
        if not self.pool.ready.is_set():
            ready = asyncio.ensure_future(self.pool.ready.wait())
            stopping = asyncio.ensure_future(self._stopping.wait())
            await asyncio.wait((ready, stopping), return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
            stopping.cancel()
        return not self._stopping.is_set()

    async def _closed_stream(self) -> None:
        while await self._wait_to_send():
            index = self.schedule.next_index()
            if index is None:
                return
            await self._send(index)

    async def _open_loop(self) -> None:
        rate = self.spec.request_rate or 1.0
        arrivals = arrival_gaps(self.spec.seed, self.schedule.shard, self.spec.worker, rate)
        tasks: set[asyncio.Task[None]] = set()
        next_at = time.perf_counter()
        while True:
            waited = not self.pool.ready.is_set()
            if not await self._wait_to_send():
                break
            if waited:  # no engine to send to is not the sender falling behind: start over
                next_at = time.perf_counter()
            # Count the sends launched, not only those running: a catch-up after a late
            # wake launches several before any runs, and `in_flight` would not see them.
            while len(tasks) >= self.spec.max_in_flight:
                self._slot_free.clear()
                await self._slot_free.wait()
            index = self.schedule.next_index()
            if index is None:
                break
            task = asyncio.ensure_future(self._send(index))
            tasks.add(task)
            task.add_done_callback(self._send_done(tasks))
            next_at, skipped = next_arrival(
                next_at, time.perf_counter(), lambda: arrivals.expovariate(rate)
            )
            if skipped:
                self.recorder.skipped(time.perf_counter(), skipped)
            delay = next_at - time.perf_counter()
            if delay > 0:
                stop = asyncio.ensure_future(self._stopping.wait())
                await asyncio.wait((stop,), timeout=delay)
                stop.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def _send_done(self, tasks: set[asyncio.Task[None]]) -> Callable[[asyncio.Task[None]], None]:
        """A launched send ended: its slot is free once it has left `tasks`."""

        def done(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            self._slot_free.set()

        return done

    async def _send(self, index: int) -> None:
        spec = self.spec
        choice = prompt_choice(spec.seed, index, len(spec.prompts))
        request = spec.prompts[choice]
        body = request.chat_body(spec.model, spec.seed + index)
        self.in_flight += 1
        try:
            started = time.perf_counter()
            try:
                connection = await self.pool.acquire()
            except OSError as error:
                now = time.perf_counter()
                message = f"connect: {error}"[:120]
                self.recorder.request_end(
                    now, None, None, 0, 0, 0, message, CONNECT_ERROR, now - started
                )
                await self._pause(self.backoff.failed())
                return
            endpoint = self.pool.endpoint_of(connection)
            host = endpoint.host_header if endpoint else connection.url.removeprefix("http://")
            data = request_bytes(host, body, request.workload)
            tokens = await connection.send(data, spec.request_timeout, self.groups[choice])
            self.schedule.add_output_tokens(tokens)
            self.pool.release(connection)
            if connection.last_outcome is None:
                self.backoff.succeeded()
            else:
                await self._pause(self.backoff.failed())
        finally:
            self.in_flight -= 1

    async def _pause(self, seconds: float) -> None:
        """Wait `seconds`, or less if the worker is stopping."""
        stop = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait((stop,), timeout=seconds)
        stop.cancel()
