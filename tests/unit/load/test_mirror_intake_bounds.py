"""The splitter's mirror port keeps its memory bounded and answers a tee that asks first.

Any pod that can reach the mirror port can send to it, so what one connection may make the
splitter hold is capped: a request line or headers past MAX_HEAD_BYTES are refused (431)
as they arrive, nothing of them is forwarded, and connections past MAX_CONNECTIONS are
closed. `Expect: 100-continue` is answered at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from specdecode_load import mirror_intake
from specdecode_load.mirror_intake import MAX_HEAD_BYTES, serve_mirror

pytestmark = pytest.mark.unit
Mirrored = list[tuple[str, bytes | None, bytes]]


@pytest.fixture
async def port_and_seen() -> AsyncIterator[tuple[int, Mirrored]]:
    seen: Mirrored = []
    server = await serve_mirror("127.0.0.1", 0, lambda *request: seen.append(request))
    yield server.sockets[0].getsockname()[1], seen
    server.close()
    await server.wait_closed()


async def _exchange(port: int, payload: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(payload)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=10)
    writer.close()
    return answer


async def test_an_endless_url_is_refused_431_before_it_is_buffered(
    port_and_seen: tuple[int, Mirrored],
) -> None:
    port, seen = port_and_seen
    head = b"POST /v1/" + b"a" * (MAX_HEAD_BYTES + 1)  # never ends: no HTTP version, no CRLF
    assert (await _exchange(port, head)).startswith(b"HTTP/1.1 431")
    assert seen == []


async def test_headers_past_the_cap_are_refused_and_not_forwarded(
    port_and_seen: tuple[int, Mirrored],
) -> None:
    port, seen = port_and_seen
    huge = b"X-Big: " + b"b" * MAX_HEAD_BYTES + b"\r\n"
    request = b"POST /v1/completions HTTP/1.1\r\n" + huge + b"Content-Length: 2\r\n\r\n{}"
    assert (await _exchange(port, request)).startswith(b"HTTP/1.1 431")
    assert seen == []


async def test_expect_continue_is_answered_then_the_request_accepted(
    port_and_seen: tuple[int, Mirrored],
) -> None:
    port, seen = port_and_seen
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /v1/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n"
        b"Connection: close\r\n\r\n"
    )
    await writer.drain()
    interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
    assert interim.startswith(b"HTTP/1.1 100 Continue")
    writer.write(b"{}")
    await writer.drain()
    assert (await asyncio.wait_for(reader.read(), timeout=10)).startswith(b"HTTP/1.1 202")
    writer.close()
    assert seen == [("/v1/completions", None, b"{}")]


async def test_connections_past_the_cap_are_closed(
    port_and_seen: tuple[int, Mirrored], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, _ = port_and_seen
    monkeypatch.setattr(mirror_intake, "MAX_CONNECTIONS", 2)
    held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert await asyncio.wait_for(reader.read(), timeout=10) == b""  # closed unanswered
    for _, other in [*held, (reader, writer)]:
        other.close()
