"""The gateway's RequestMirror copies: sampled per filter, bounded, answers read and dropped.

Why apart from the proxy: a copy must never delay or fail the primary response. Each runs
as its own task on its own connection pool; when ``limit`` copies are in flight a new one
is dropped and counted rather than queued, so a slow mirror backend cannot build a backlog
that eats the gateway's memory or sockets. Outcomes per backend key ``<ns>/<svc>:<port>``:
``skipped`` (not sampled), ``dropped`` (no free slot), ``unroutable`` (no ready endpoint),
``sent``, then ``succeeded`` (answered below 500) or ``failed``.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict
from collections.abc import Callable

import httpx

from localcluster.httproute import BackendRef, Mirror

TIMEOUT = httpx.Timeout(60.0, connect=5.0)
Headers = list[tuple[bytes, bytes]]


class Mirrors:
    """Sends copies in the background of the request that triggered them."""

    def __init__(self, limit: int, rng: random.Random) -> None:
        self.limit = limit
        self.rng = rng
        self.in_flight = 0
        self.counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._tasks: set[asyncio.Task[None]] = set()
        self._client = httpx.AsyncClient(
            timeout=TIMEOUT, trust_env=False, limits=httpx.Limits(max_connections=limit)
        )

    def start(
        self,
        mirror: Mirror,
        address_of: Callable[[BackendRef], str | None],
        method: str,
        target: str,
        headers: Headers,
        body: bytes,
    ) -> None:
        """Decide and, if sampled and a slot is free, send one copy without awaiting it."""
        counts = self.counts[mirror.backend.key]
        if not mirror.sampled(self.rng):
            counts["skipped"] += 1
            return
        if self.in_flight >= self.limit:
            counts["dropped"] += 1
            return
        address = address_of(mirror.backend)
        if address is None:
            counts["unroutable"] += 1
            return
        counts["sent"] += 1
        self.in_flight += 1
        url = f"http://{address}{target}"
        task = asyncio.create_task(self._send(counts, method, url, headers, body))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(
        self, counts: Counter[str], method: str, url: str, headers: Headers, body: bytes
    ) -> None:
        try:
            async with self._client.stream(method, url, headers=headers, content=body) as reply:
                async for _ in reply.aiter_raw():
                    pass
            counts["succeeded" if reply.status_code < 500 else "failed"] += 1
        except httpx.HTTPError:
            counts["failed"] += 1
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        """Abandon copies still in flight and close the connection pool."""
        for task in list(self._tasks):
            task.cancel()
        await self._client.aclose()
