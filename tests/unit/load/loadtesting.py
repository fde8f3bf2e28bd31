"""Helpers for the load-pod tests: a manual clock, fake transports, SSE byte streams."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace

from specdecode.domain.observations import LatencyBlock
from specdecode.domain.prompts import SamplingDefaults
from specdecode_load import connection as connection_module
from specdecode_load.connection import StreamConnection
from specdecode_load.recorder import BlockRecorder
from specdecode_load.worker import LoadWorker, WorkerSpec

# Sampling for the tests' own prompt sets (a rollout takes its spec's temperature and topP).
GREEDY = SamplingDefaults(temperature=0.0, top_p=1.0)


class ManualClock:
    """A perf_counter that moves only when told (starts at the real one, so the recorder's
    block end, taken from the real clock, stays ahead)."""

    def __init__(self) -> None:
        self.now = time.perf_counter()

    def perf_counter(self) -> float:
        return self.now

    def time(self) -> float:
        return time.time()


class FakeTransport:
    """Collects writes; abort/close mark it closing."""

    def __init__(self) -> None:
        self.written = b""
        self.closing = False

    def write(self, data: bytes) -> None:
        self.written += data

    def abort(self) -> None:
        self.closing = True

    def close(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing


def chat_event(cumulative: int | None, text: str = "x", spaced: bool = False) -> bytes:
    """One SSE chat chunk; usage omitted when `cumulative` is None."""
    sep = ": " if spaced else ":"
    usage = "" if cumulative is None else f',"usage":{{"completion_tokens"{sep}{cumulative}}}'
    return f'data: {{"choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]{usage}}}\n\n'.encode()


def usage_event(cumulative: int) -> bytes:
    """The final include_usage chunk (no choices)."""
    return f'data: {{"choices":[],"usage":{{"completion_tokens":{cumulative}}}}}\n\n'.encode()


def role_event() -> bytes:
    """The first chat chunk: role, empty content, zero tokens."""
    return b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],' + (
        b'"usage":{"completion_tokens":0}}\n\n'
    )


DONE = b"data: [DONE]\n\n"


def response(events: list[bytes], status: int = 200) -> tuple[bytes, list[bytes]]:
    """(HTTP head, chunked body pieces one per event, the last one with the terminator)."""
    head = (
        f"HTTP/1.1 {status} X\r\nContent-Type: text/event-stream\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    pieces = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
    pieces[-1] += b"0\r\n\r\n"
    return head, pieces


class Harness:
    """A StreamConnection on a fake transport, a manual clock and the blocks it ships."""

    def __init__(self, monkeypatch: object) -> None:
        self.clock = ManualClock()
        patch = getattr(monkeypatch, "setattr")  # noqa: B009 - pytest's MonkeyPatch
        patch(connection_module, "time", SimpleNamespace(perf_counter=self.clock.perf_counter))
        self.shipped: list[LatencyBlock] = []
        self.recorder = BlockRecorder(1e9, self.shipped.append)  # no boundary inside a test
        self.connection = StreamConnection(self.recorder, "http://engine:8000")
        self.transport = FakeTransport()
        self.connection.connection_made(self.transport)  # type: ignore[arg-type]
        self.future: asyncio.Future[int] | None = None

    def start(self, group: str | None = None) -> None:
        self.future = self.connection.send(b"POST ...", timeout=60.0, group=group)

    def feed(self, data: bytes, at: float) -> None:
        """Deliver bytes `at` seconds after the request started."""
        self.clock.now = self.start_time + at
        self.connection.data_received(data)

    @property
    def start_time(self) -> float:
        return self.connection._started

    def block(self) -> LatencyBlock:
        return self.recorder.close()


async def wait_until(predicate: Callable[[], bool], within: float = 10.0) -> None:
    """Wait for a condition (polling the loop), failing after `within` seconds."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


async def blocks_until_done(
    spec: WorkerSpec, server: asyncio.Server, stepping: asyncio.Task[None]
) -> list[LatencyBlock]:
    """A load worker's blocks from its first request until its schedule's cap is sent and
    answered; then the worker and the reference server it read are stopped."""
    blocks: list[LatencyBlock] = []
    worker = LoadWorker(spec, lambda block, _: blocks.append(block))
    running = asyncio.ensure_future(worker.run(drain_seconds=5.0))
    try:
        await wait_until(lambda: spec.schedule.cap_reached and worker.in_flight == 0, within=60.0)
    finally:
        worker.stop()
        await running
        stepping.cancel()
        server.close()
    return blocks
