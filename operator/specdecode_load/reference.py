"""A reference streaming engine whose every chunk carries its send time: the instrument's
calibration target (benchmarks/instrument.py and the unit tests use it).

Why: to know what the client adds, the truth must be known per chunk; each chunk is
stamped with CLOCK_MONOTONIC right before the write, and the true gaps are kept (`/v1/truth`).
Seeded, so two servers with the same seed run the same steps. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import json
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import cast

import httptools

from specdecode.domain.sketch import Sketch

_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def _chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(cumulative: int, added: int, stamp: float, finish: bool) -> bytes:
    reason = '"length"' if finish else "null"
    return (
        b'data: {"id":"chatcmpl-ref","object":"chat.completion.chunk","created":0,'
        b'"model":"ref","choices":[{"index":0,"delta":{"content":"%s"},"logprobs":null,'
        b'"finish_reason":%s}],"usage":{"prompt_tokens":8,"total_tokens":%d,'
        b'"completion_tokens":%d},"t":%.9f}\n\n'
        % (b" tok" * added, reason.encode(), cumulative + 8, cumulative, stamp)
    )


@dataclass(frozen=True)
class Fault:
    """What the engine does wrong with one request (see the module docstring)."""

    kind: str  # "status", "cut", "hang", "noseparator"
    value: int = 0  # the status, the tokens before the cut or hang, or the event's bytes


@dataclass
class _Stream:
    transport: asyncio.Transport
    max_tokens: int
    rng: random.Random
    tokens: int = 0
    last_stamp: float = -1.0
    fault: Fault | None = None
    workload: str = ""
    per_step: int = 1  # at most this many tokens per step
    steps: int = 0  # decode chunks after the first
    accepted: int = 0  # their tokens beyond one each
    held: list[bytes] = field(default_factory=list)  # made, not yet written (`burst_every`)
    last_release: float = 0.0  # when its last held chunk was written (`release_spacing`)


@dataclass
class ReferenceEngine:
    """The step loop and its truth. `step_seconds` may be a list cycled per step."""

    step_seconds: list[float]
    max_tokens_per_step: int = 1
    seed: int = 0
    streams: list[_Stream] = field(default_factory=list)
    truth_chunk: Sketch = field(default_factory=Sketch)
    truth_token: Sketch = field(default_factory=Sketch)
    true_gaps: list[float] = field(default_factory=list)  # kept only when `keep_gaps`
    keep_gaps: bool = False
    chunks: int = 0
    connections: int = 0  # accepted so far (keep-alive reuse shows as few)
    faults: dict[int, Fault] = field(default_factory=dict)
    default_fault: Fault | None = None
    requests: list[tuple[int, Fault | None]] = field(default_factory=list)  # (seed, fault)
    tokens_per_step_by_class: dict[str, int] = field(default_factory=dict)
    accepted_truth: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # A server that bursts on purpose: each stream's chunks are held and written
    # `burst_every` at a time (and at its end) in one write; 0 writes each at its step.
    # The truth keeps the steps' gaps, stamps included: what a healthy client should see.
    burst_every: int = 0
    # Tokens in a stream's first chunk (0: as any step); a known truth for time per output
    # token, whose span starts after that chunk.
    first_chunk_tokens: int = 0
    # How a held burst is written: 0 in one write; else chunk by chunk this many seconds
    # apart (a sender stepping over an absolute burst floor), paced by a thread since the
    # event loop's timers wake at 1 ms at best. Their write-to-write gaps: `release_truth`.
    release_spacing: float = 0.0
    release_truth: Sketch = field(default_factory=Sketch)
    _releases: queue.SimpleQueue[tuple[_Stream, list[bytes]]] | None = None
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    def join(
        self, transport: asyncio.Transport, body: dict[str, object], workload: str = ""
    ) -> None:
        """A new request: headers and the role chunk now, tokens from the next step."""
        seed = int(str(body.get("seed", 0)))
        max_tokens = int(str(body.get("max_tokens", 16)))
        fault = self.faults.get(seed, self.default_fault)
        self.requests.append((seed, fault))
        if fault is not None and fault.kind == "status":
            text = b"injected fault"
            head = b"HTTP/1.1 %d Injected\r\nContent-Length: %d\r\n\r\n" % (fault.value, len(text))
            transport.write(head + text)
            return
        if fault is not None and fault.kind == "noseparator":
            transport.write(_HEAD + _chunked(b"data: " + b"x" * fault.value))
            return
        transport.write(_HEAD + _chunked(b'data: {"choices":[{"index":0,"delta":{"role":'
                                         b'"assistant","content":""}}],"usage":'
                                         b'{"completion_tokens":0}}\n\n'))  # fmt: skip
        if fault is not None and fault.value == 0:  # cut or hang before the first token
            if fault.kind == "cut":
                transport.close()
            return
        per_step = self.tokens_per_step_by_class.get(workload, self.max_tokens_per_step)
        rng = random.Random(seed)
        self.streams.append(_Stream(transport, max_tokens, rng, fault=fault, workload=workload,
                                    per_step=per_step))  # fmt: skip
        self._wake.set()

    async def run(self) -> None:
        """Step forever: one chunk per active stream per step, each step at least its
        `step_seconds` after the last one's end."""
        step_index = 0
        next_at = time.perf_counter()
        while True:
            if not self.streams:
                self._wake.clear()
                await self._wake.wait()
                next_at = time.perf_counter()
            # A step late (the loop was busy) is not made up by the next: an engine never
            # runs two steps at once, and back-to-back writes would be bursts in the truth.
            next_at = max(next_at, time.perf_counter())
            next_at += self.step_seconds[step_index % len(self.step_seconds)]
            step_index += 1
            await asyncio.sleep(max(next_at - time.perf_counter(), 0.0))
            self._step()

    def _step(self) -> None:
        alive: list[_Stream] = []
        for stream in self.streams:
            if stream.transport.is_closing():
                continue
            per_step = self.first_chunk_tokens if not stream.tokens else 0
            added = min(per_step or stream.rng.randint(1, stream.per_step),
                        stream.max_tokens - stream.tokens)  # fmt: skip
            if stream.tokens:
                stream.steps, stream.accepted = stream.steps + 1, stream.accepted + added - 1
            stream.tokens += added
            finish = stream.tokens >= stream.max_tokens
            stamp = time.perf_counter()
            data = _chunked(_event(stream.tokens, added, stamp, finish))
            if finish:
                final = self._final_chunk(stream)
                data += _chunked(final) + _chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n"
            stream.held.append(data)
            fault = stream.fault
            stops = fault is not None and stream.tokens >= fault.value and not finish
            if finish or stops or (stream.steps + 1) % max(self.burst_every, 1) == 0:
                self._release(stream)
            if stream.last_stamp >= 0:
                gap = stamp - stream.last_stamp
                self.truth_chunk.add(gap)
                self.truth_token.add(gap / added, added)
                if self.keep_gaps:
                    self.true_gaps.append(gap)
            stream.last_stamp = stamp
            self.chunks += 1
            if stops and fault is not None:
                if fault.kind == "cut":
                    stream.transport.close()
                continue  # cut, or hung: no more chunks for it
            if not finish:
                alive.append(stream)
        self.streams = alive

    def _release(self, stream: _Stream) -> None:
        """Write a stream's held chunks: at once, or `release_spacing` apart (a thread)."""
        held, stream.held = stream.held, []
        if self.release_spacing <= 0 or len(held) < 2:
            stream.transport.write(b"".join(held))
            return
        if self._releases is None:
            self._releases = queue.SimpleQueue()
            loop = asyncio.get_running_loop()
            threading.Thread(target=self._pace, args=(loop,), daemon=True).start()
        self._releases.put((stream, held))

    def _pace(self, loop: asyncio.AbstractEventLoop) -> None:
        """The release thread: each held chunk handed to the loop `release_spacing` apart."""
        assert self._releases is not None
        while True:
            stream, held = self._releases.get()
            for index, piece in enumerate(held):
                loop.call_soon_threadsafe(self._write_released, stream, piece, index > 0)
                time.sleep(self.release_spacing)

    def _write_released(self, stream: _Stream, piece: bytes, within: bool) -> None:
        now = time.perf_counter()
        if within:  # a gap inside one release: the spacing a client should read
            self.release_truth.add(now - stream.last_release)
        stream.last_release = now
        if not stream.transport.is_closing():
            stream.transport.write(piece)

    def _final_chunk(self, stream: _Stream) -> bytes:
        """The usage chunk that ends a stream; its request counts in `accepted_truth`."""
        requests, steps, accepted = self.accepted_truth.get(stream.workload, (0, 0, 0))
        self.accepted_truth[stream.workload] = (
            requests + 1, steps + stream.steps, accepted + stream.accepted
        )  # fmt: skip
        return b'data: {"choices":[],"usage":{"completion_tokens":%d}}\n\n' % stream.tokens

    def truth(self, reset: bool) -> dict[str, object]:
        """The true gap sketches since the last reset."""
        answer = {
            "perChunkItl": self.truth_chunk.to_wire(),
            "perTokenItl": self.truth_token.to_wire(),
            "chunks": self.chunks,
        }
        if reset:
            self.truth_chunk, self.truth_token, self.chunks = Sketch(), Sketch(), 0
        return answer


class _ServerConnection(asyncio.Protocol):
    def __init__(self, engine: ReferenceEngine) -> None:
        self._engine = engine
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._url = b""
        self._body = b""
        self._workload = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._engine.connections += 1

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            assert self._transport is not None
            self._transport.close()

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"x-workload-class":
            self._workload = value.decode()

    def on_body(self, body: bytes) -> None:
        self._body += body

    def on_message_complete(self) -> None:
        assert self._transport is not None
        url, body, self._url, self._body = self._url, self._body, b"", b""
        if url.startswith(b"/v1/truth"):
            payload = json.dumps(self._engine.truth(b"reset" in url)).encode()
            self._transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
            )
            return
        workload, self._workload = self._workload, ""
        self._engine.join(self._transport, json.loads(body or b"{}"), workload)


async def start_reference(
    engine: ReferenceEngine, host: str = "127.0.0.1", port: int = 0
) -> tuple[asyncio.Server, int, asyncio.Task[None]]:
    """Listen and step on the running loop; (server, port, step task)."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _ServerConnection(engine), host, port)
    bound = server.sockets[0].getsockname()[1]
    return server, int(bound), asyncio.ensure_future(engine.run())
