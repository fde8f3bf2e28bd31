"""A minimal HTTP/1.1 server for the pod's main process: reports, health, endpoint pushes.

Why not a framework: the load image should stay small and the main process serves three
tiny routes to one client (the operator), so httptools' request parser plus one response
per connection (`Connection: close`) is all it needs. Handlers are synchronous and return
JSON-ready data; encoding happens here, in the main process, never in a measuring loop.
With a token (the rollout's, from the environment) every route but `/healthz` (the
kubelet's probe) requires `Authorization: Bearer <token>`: 401 otherwise.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, cast

import httptools

# (method, target, body) -> (status, JSON-ready payload)
Handler = Callable[[str, str, bytes], tuple[int, Any]]
MAX_BODY_BYTES = 1 << 20
OPEN_PATHS = ("/healthz",)  # what answers without the token


class _Request(asyncio.Protocol):
    def __init__(self, handler: Handler, token: str | None = None) -> None:
        self._handler = handler
        self._expected = f"Bearer {token}".encode() if token else None
        self._authorization = b""
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._target = b""
        self._body = b""
        self._complete = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def on_url(self, url: bytes) -> None:
        self._target += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"authorization":
            self._authorization = value

    def on_body(self, body: bytes) -> None:
        self._body += body

    def on_message_complete(self) -> None:
        self._complete = True

    def data_received(self, data: bytes) -> None:
        if self._complete:
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._respond(400, {"error": "bad HTTP request"})
            return
        if len(self._body) > MAX_BODY_BYTES:
            self._respond(413, {"error": "request body too large"})
        elif self._complete and not self._authorized():
            self._respond(401, {"error": "a load pod answers its rollout's operator only"})
        elif self._complete:
            method = self._parser.get_method().decode()
            try:
                status, payload = self._handler(method, self._target.decode(), self._body)
            except Exception as error:
                status, payload = 500, {"error": f"{type(error).__name__}: {error}"}
            self._respond(status, payload)

    def _authorized(self) -> bool:
        if self._expected is None or self._target.split(b"?")[0].decode() in OPEN_PATHS:
            return True
        return hmac.compare_digest(self._authorization, self._expected)

    def _respond(self, status: int, payload: Any) -> None:
        body = json.dumps(payload, separators=(",", ":")).encode()
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        )
        assert self._transport is not None
        self._transport.write(head.encode() + body)
        self._transport.close()
        self._complete = True


async def serve_http(
    host: str, port: int, handler: Handler, token: str | None = None
) -> asyncio.Server:
    """Listen on host:port and answer every request with `handler` (only those carrying
    `token`, when given, except `/healthz`)."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: _Request(handler, token), host, port)
