"""One keep-alive HTTP/1.1 connection streaming chat completions, timed at the socket.

Why a raw asyncio Protocol: a chunk's arrival time is only as good as the delay between
the bytes reaching the socket and their stamp; here the stamp is the first statement of
`data_received`, and parsing (httptools, a bytes regex for usage) stays off the JSON path.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any, cast

import httptools

from specdecode.domain.in_flight import OpenRequest
from specdecode.domain.latency_block import time_per_output_token
from specdecode_load.recorder import BlockRecorder

_COMPLETION_TOKENS = re.compile(rb'"completion_tokens"\s*:\s*(\d+)')
_DONE = b"data: [DONE]"
_ENGINE_METRICS = b'"speculative_decoding"'
_ENGINE_COUNTS = tuple(
    re.compile(rb'"%s"\s*:\s*(\d+)' % name)
    for name in (b"num_spec_steps", b"num_draft_tokens", b"num_accepted_draft_tokens")
)
_ERROR_BODY_BYTES = 160
MAX_EVENT_BYTES = 1 << 20  # an SSE event larger than this, unseparated, is a stream error

TIMEOUT, STREAM_CUT, STREAM_ERROR = "timeout", "stream_cut", "stream_error"
CONNECT_ERROR = "connect_error"


class StreamConnection(asyncio.Protocol):
    """A connection that runs one request at a time and reports to a `BlockRecorder`."""

    def __init__(self, recorder: BlockRecorder, url: str) -> None:
        self.url = url
        self.recorder = recorder
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = time.perf_counter()
        self._parser = httptools.HttpResponseParser(self)
        self._buffer = bytearray()
        self._future: asyncio.Future[int] | None = None
        self._timeout: asyncio.TimerHandle | None = None
        self._aborting = False  # our own close(): an in-flight request is not recorded
        self.last_outcome: str | None = None  # the last request's failure kind, None if ok
        self._group: str | None = None  # the request's traffic group
        self._reset(0.0)

    def _reset(self, started: float) -> None:
        self._started = started
        self._first_at = -1.0
        self._last_at = 0.0
        self._tokens = 0
        self._first_tokens = 0
        self._content_chunks = 0
        self._without_usage = False
        self._final_usage = 0
        self._status = 0
        self._error_body = b""
        self._complete = False
        self._keep_alive = False
        self._in_read = 0
        self._engine: tuple[int, int, int] | None = None  # steps, drafted, accepted

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()  # first: the arrival stamp of everything in this read
        self._in_read = 0
        if self._future is None:
            return  # bytes nobody asked for: ignore until the server closes
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._finish(now, f"bad HTTP response: {error}"[:120], STREAM_ERROR)
            return
        buffer = self._buffer
        if buffer:
            start = 0
            try:
                while (end := buffer.find(b"\n\n", start)) >= 0:
                    self._event(bytes(buffer[start:end]), now)
                    start = end + 2
            except ValueError as error:  # an event that is not JSON
                self._finish(now, f"bad event: {error}"[:120], STREAM_ERROR)
                return
            if start:
                del buffer[:start]
            if len(buffer) > MAX_EVENT_BYTES:
                reason = f"event over {MAX_EVENT_BYTES} bytes without a separator"
                self._finish(now, reason, STREAM_ERROR)
                return
        if self._complete:
            self._finish(now, None, None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._future is not None and self._aborting:
            future, self._future = self._future, None
            self._cancel_timer()
            if not future.done():
                future.set_result(0)  # our own shutdown: not the engine's outcome
        elif self._future is not None:
            reason = f"connection lost: {exc}" if exc else "connection closed by the engine"
            self._finish(time.perf_counter(), reason[:120], STREAM_CUT)

    # httptools callbacks (called inside feed_data)

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self._status == 200:
            self._buffer += body
        elif len(self._error_body) < _ERROR_BODY_BYTES:
            self._error_body += body[:_ERROR_BODY_BYTES]

    def on_message_complete(self) -> None:
        self._complete = True
        self._keep_alive = self._parser.should_keep_alive()  # only valid inside the callback

    # requests

    def send(self, request: bytes, timeout: float, group: str | None = None) -> asyncio.Future[int]:
        """Start a request; the future gives the tokens received (failures are recorded).
        `group`: its traffic group's key, under which its acceptance is also recorded."""
        assert self.transport is not None and self._future is None
        loop = asyncio.get_running_loop()
        self._future = loop.create_future()
        self._buffer.clear()
        self._reset(time.perf_counter())
        self._group = group
        self._timeout = loop.call_later(timeout, self._timed_out, timeout)
        self.transport.write(request)
        return self._future

    def open_request(self, at: float) -> OpenRequest | None:
        """The request in flight at monotonic time `at` (None: none, or sent after `at`):
        its age since the send and its open gap since its last content chunk (or send)."""
        if self._future is None or self._started > at:
            return None
        if self._first_at < 0 or self._first_at > at:
            last = self._started  # no token by `at`: waiting since the send
        elif self._last_at <= at:
            last = self._last_at
        else:
            last = at  # a chunk came after `at`: the gap then is unknown, count none
        return OpenRequest(age=at - self._started, open_gap=max(at - last, 0.0))

    def _timed_out(self, timeout: float) -> None:
        self._timeout = None
        if self._future is not None:
            self._finish(time.perf_counter(), f"timeout after {timeout:g}s", TIMEOUT)

    def _event(self, event: bytes, now: float) -> None:
        if not event.startswith(b"data:"):
            return  # SSE comments and other fields carry no tokens
        match = _COMPLETION_TOKENS.search(event)
        if match is not None:
            cumulative = int(match.group(1))
            if self._without_usage:  # a final usage chunk after usage-less content
                self._final_usage = cumulative
                self._read_engine_metrics(event)
                return
            added = cumulative - self._tokens
        elif event == _DONE:
            return
        else:
            added = 1 if _has_content(json.loads(event[5:])) else 0
            if added:
                self._without_usage = True
        if added <= 0:
            self._read_engine_metrics(event)  # the final usage chunk carries them
            return
        if self._first_at < 0:
            self._first_at = now
            self._first_tokens = added
        else:
            merged = self._in_read > 0
            self.recorder.chunk_gap(now, now - self._last_at, added, merged)
        self._in_read += 1
        self._last_at = now
        self._tokens += added
        self._content_chunks += 1

    def _read_engine_metrics(self, event: bytes) -> None:
        at = event.find(_ENGINE_METRICS)
        if at < 0:
            return
        found = [pattern.search(event, at) for pattern in _ENGINE_COUNTS]
        if all(match is not None for match in found):
            steps, drafted, accepted = (int(m.group(1)) for m in found if m is not None)
            self._engine = (steps, drafted, accepted)

    def _cancel_timer(self) -> None:
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None

    def _finish(self, now: float, error: str | None, outcome: str | None) -> None:
        """Record the request's end (see the module docstring for what each outcome adds)."""
        future, self._future = self._future, None
        self._cancel_timer()
        tokens = max(self._tokens, self._final_usage)
        if error is None and self._status != 200:
            text = self._error_body.decode(errors="replace").strip()
            error, outcome = f"HTTP {self._status}: {text}"[:120], f"http_{self._status}"
        elif error is None and tokens == 0:
            error, outcome = "stream ended without tokens", STREAM_ERROR
        ttft = tpot = stall = None
        steps = accepted = 0
        if error is not None:
            stall = now - (self._last_at if self._first_at >= 0 else self._started)
        if self._first_at >= 0:
            ttft = self._first_at - self._started
            steps = self._content_chunks - 1
            accepted = tokens - self._first_tokens - steps
            if error is not None:  # to its end, the token it waited for counted
                tpot = time_per_output_token(
                    now - self._first_at, self._tokens - self._first_tokens + 1
                )
            elif self._content_chunks > 1:  # one chunk: no span to time
                tpot = time_per_output_token(
                    self._last_at - self._first_at, tokens - self._first_tokens
                )
        self.recorder.request_end(
            now, ttft, tpot, tokens, steps, accepted, error, outcome, now - self._started, stall,
            group=self._group, engine=self._engine,
        )  # fmt: skip
        self.last_outcome = outcome
        reusable = self._complete and self._keep_alive  # a whole response, even an error
        if not reusable or (error is not None and not (outcome or "").startswith("http_")):
            self.close()
        self.idle_since = now
        if future is not None and not future.done():
            future.set_result(tokens)

    def close(self) -> None:
        """Close the socket (an in-flight request ends unrecorded: our own abort)."""
        self._aborting = True
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


def _has_content(chunk: Any) -> bool:
    """Whether a decoded chunk carries text (chat delta content or completion text)."""
    if not isinstance(chunk, dict):
        return False
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    first = choices[0]
    delta = first.get("delta")
    text = delta.get("content") if isinstance(delta, dict) else first.get("text")
    return bool(text)


CHAT_PATH = "/v1/chat/completions"


def request_bytes(
    host: str, body: dict[str, object] | bytes, workload: str | None, path: str = CHAT_PATH
) -> bytes:
    """The HTTP/1.1 request for one streamed completion (chat by default; the splitter
    forwards /v1/completions too). Only these headers are sent: nothing of a caller's."""
    payload = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
    extra = f"X-Workload-Class: {workload}\r\n" if workload else ""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\n{extra}"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload
