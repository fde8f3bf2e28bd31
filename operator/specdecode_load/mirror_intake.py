"""The splitter's mirror-facing port: takes a request, answers 202 at once, hands it on.

Why answer before forwarding: a gateway may wait for the mirror's (discarded) response, so
the splitter never holds a client whatever the shadows do. No token here (a mirror carries
the caller's headers); memory is bounded per connection. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

import httptools

from specdecode_load.mirror_request import WORKLOAD_HEADER

MAX_MIRROR_BODY_BYTES = 4 << 20
MAX_HEAD_BYTES = 64 << 10  # request line and headers of one request
MAX_CONNECTIONS = 1024  # open mirror connections at once
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
    b"Connection: close\r\n\r\n"
)
ACCEPTED = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
TOO_LARGE = b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

# (path, the traffic label header or None, body) -> None; called after the 202 is written
OnMirrored = Callable[[str, bytes | None, bytes], None]


class MirrorIntake(asyncio.Protocol):
    """One client connection of the mirror port."""

    def __init__(self, on_mirrored: OnMirrored, open_connections: list[int]) -> None:
        self._on_mirrored = on_mirrored
        self._open = open_connections  # one shared count, [n], for all connections
        self._head_size = 0
        self._expects_continue = False
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._url = b""
        self._workload: bytes | None = None
        self._body = bytearray()
        self._too_large = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self._open[0] += 1
        if self._open[0] > MAX_CONNECTIONS:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._open[0] -= 1

    def data_received(self, data: bytes) -> None:
        if self._transport is None or self._transport.is_closing():
            return  # refused: nothing more is read or buffered
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._close_with(BAD_REQUEST)

    # httptools callbacks

    def on_message_begin(self) -> None:
        self._url, self._workload, self._body, self._too_large = b"", None, bytearray(), False
        self._head_size, self._expects_continue = 0, False

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._check_head(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._check_head(len(name) + len(value))
        lowered = name.lower()
        if lowered == WORKLOAD_HEADER:
            self._workload = value
        elif lowered == b"expect" and value.lower() == b"100-continue":
            self._expects_continue = True

    def on_headers_complete(self) -> None:
        if self._expects_continue and self._transport is not None:
            self._transport.write(CONTINUE)

    def _check_head(self, size: int) -> None:
        """Refuse a request line and headers past MAX_HEAD_BYTES (431) as they arrive."""
        self._head_size += size
        if self._head_size > MAX_HEAD_BYTES:
            self._close_with(HEAD_TOO_LARGE)

    def on_body(self, body: bytes) -> None:
        if len(self._body) + len(body) > MAX_MIRROR_BODY_BYTES:
            self._too_large = True
        elif not self._too_large:
            self._body += body

    def on_message_complete(self) -> None:
        if self._too_large:
            self._close_with(TOO_LARGE)
            return
        if self._transport is None or self._transport.is_closing():
            return  # refused (431) or over the connection cap: nothing is forwarded
        self._transport.write(ACCEPTED)  # first: the caller is free before any forwarding
        if not self._parser.should_keep_alive():
            self._transport.close()
        self._on_mirrored(self._url.decode(errors="replace"), self._workload, bytes(self._body))

    def _close_with(self, response: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(response)
            self._transport.close()


async def serve_mirror(host: str, port: int, on_mirrored: OnMirrored) -> asyncio.Server:
    """Listen for mirrored requests on host:port."""
    loop = asyncio.get_running_loop()
    open_connections = [0]
    return await loop.create_server(lambda: MirrorIntake(on_mirrored, open_connections), host, port)
