"""Keep-alive connections to the engines of one side, spread round-robin per connection.

Why per connection and not per request: a streamed request holds its connection for its
whole life, and closed-loop streams reuse theirs, so choosing the endpoint when a
connection opens spreads streams evenly over the replicas without any per-request work.
The operator pushes endpoint changes; connections to a removed endpoint are closed when
they are next released, and idle ones are dropped before the engine's keep-alive timeout
(uvicorn, and so vLLM, closes idle connections after 5 s) so a send never races a close.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from specdecode.domain.in_flight import OpenRequest
from specdecode_load.connection import StreamConnection
from specdecode_load.recorder import BlockRecorder

IDLE_LIMIT_SECONDS = 3.0
CONNECT_TIMEOUT_SECONDS = 10.0


class EndpointError(ValueError):
    """An engine URL this client cannot use (only http://host:port is supported)."""


@dataclass(frozen=True)
class Endpoint:
    """One engine's address."""

    url: str
    host: str
    port: int

    @property
    def host_header(self) -> str:
        """The Host header for requests to it."""
        return f"{self.host}:{self.port}"


def parse_endpoint(url: str) -> Endpoint:
    """`http://host:port` (a trailing slash is fine); anything else is an EndpointError."""
    parts = urlsplit(url.strip())
    if parts.scheme != "http" or not parts.hostname:
        raise EndpointError(f"endpoint {url!r}: expected http://host:port")
    if parts.path not in ("", "/") or parts.query:
        raise EndpointError(f"endpoint {url!r}: no path or query, the client adds /v1/...")
    try:
        port = parts.port or 80
    except ValueError as error:
        raise EndpointError(f"endpoint {url!r}: {error}") from error
    return Endpoint(url=f"http://{parts.netloc}", host=parts.hostname, port=port)


class ConnectionPool:
    """Idle connections (most recent first) and the endpoint list they may point at."""

    def __init__(
        self,
        recorder: BlockRecorder,
        endpoints: list[Endpoint],
        connection_class: type[StreamConnection] = StreamConnection,
    ) -> None:
        self._recorder = recorder
        self._connection_class = connection_class
        self._endpoints: dict[str, Endpoint] = {}
        self._order: list[Endpoint] = []
        self._next = 0
        self._idle: list[StreamConnection] = []
        self._busy: set[StreamConnection] = set()
        self.ready = asyncio.Event()
        self.set_endpoints(endpoints)

    @property
    def endpoints(self) -> list[Endpoint]:
        """The current endpoints, in round-robin order."""
        return list(self._order)

    def set_endpoints(self, endpoints: list[Endpoint]) -> None:
        """Replace the endpoint list; idle connections to removed ones close now."""
        self._order = list(dict.fromkeys(endpoints))
        self._endpoints = {e.url: e for e in self._order}
        keep = [c for c in self._idle if c.url in self._endpoints]
        for connection in self._idle:
            if connection.url not in self._endpoints:
                connection.close()
        self._idle = keep
        if self._order:
            self.ready.set()
        else:
            self.ready.clear()

    def next_endpoint(self) -> Endpoint:
        """The endpoint a new connection opens to (round-robin).

        ConnectionError (an OSError) when none is listed: an open-loop send launched
        before the endpoints were withdrawn runs after, and must end as a recorded
        connect failure, not vanish with an exception no one reads."""
        if not self._order:
            raise ConnectionError("no engine endpoint listed")
        endpoint = self._order[self._next % len(self._order)]
        self._next += 1
        return endpoint

    def endpoint_of(self, connection: StreamConnection) -> Endpoint | None:
        """The endpoint a connection points at, if it is still listed."""
        return self._endpoints.get(connection.url)

    async def acquire(self) -> StreamConnection:
        """An idle connection to a listed endpoint, or a new one (OSError if it fails)."""
        now = time.perf_counter()
        while self._idle:
            connection = self._idle.pop()
            fresh = now - connection.idle_since < IDLE_LIMIT_SECONDS
            if not connection.closed and fresh and connection.url in self._endpoints:
                self._busy.add(connection)
                return connection
            connection.close()
        endpoint = self.next_endpoint()
        loop = asyncio.get_running_loop()
        make, recorder = self._connection_class, self._recorder
        connecting = loop.create_connection(
            lambda: make(recorder, endpoint.url), endpoint.host, endpoint.port
        )
        # TimeoutError is an OSError: the caller records it like a refused connection
        _, protocol = await asyncio.wait_for(connecting, CONNECT_TIMEOUT_SECONDS)
        self._busy.add(protocol)
        return protocol

    def release(self, connection: StreamConnection) -> None:
        """Give a connection back after its request ended (closed ones are dropped)."""
        self._busy.discard(connection)
        if connection.closed or connection.url not in self._endpoints:
            connection.close()
        else:
            self._idle.append(connection)

    def open_requests(self, at: float) -> list[OpenRequest]:
        """The requests in flight on this pool's connections at monotonic time `at`."""
        found = (connection.open_request(at) for connection in self._busy)
        return [request for request in found if request is not None]

    def close_all(self) -> None:
        """Abort every connection (shutdown: in-flight requests end as failures)."""
        for connection in [*self._idle, *self._busy]:
            connection.close()
        self._idle.clear()
        self._busy.clear()
