"""Live users for e2e tests and the demo: streamed chat requests through a gateway (or
straight to a mirror target, the Mirror splitter, which answers 202 at once).

Mirror traffic needs production traffic to copy. This plays the users in front of the
Gateway: a fixed number of concurrent clients, each sending one streamed chat request
after another, from a background thread with its own event loop, until stopped. Errors
(a production Service without endpoints yet) are counted, not raised: live users retry.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx

PROMPTS = (
    "Explain how a hash map handles collisions.",
    "Summarise the causes of the French Revolution in five sentences.",
    "Write a short poem about autumn in the mountains.",
    "What are the trade-offs between TCP and QUIC?",
    "Give three tips for writing readable Python.",
)
RETRY_PAUSE_SECONDS = 0.2  # a user's pause after an error, not a wait for a condition
# A mirror target (the Mirror splitter) answers 202 at once: a user then pauses as if it
# had read a streamed answer, so the mirrored rate stays a user's, not a flood.
ACCEPTED_PAUSE_SECONDS = 0.25


@dataclass
class LiveTraffic:
    """Counters of the live users; read them from the test thread at any time."""

    url: str
    model: str
    concurrency: int = 8
    max_tokens: int = 64
    ok: int = 0
    accepted: int = 0  # 202s of a mirror target
    failed: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    async def _user(self, client: httpx.AsyncClient, user: int) -> None:
        sent = 0
        while not self._stop.is_set():
            body = {
                "model": self.model,
                "messages": [{"role": "user", "content": PROMPTS[(user + sent) % len(PROMPTS)]}],
                "max_tokens": self.max_tokens,
                "stream": True,
            }
            sent += 1
            try:
                async with client.stream("POST", f"{self.url}/v1/chat/completions", json=body) as r:
                    async for _ in r.aiter_lines():
                        pass
                    if r.status_code == 200:
                        self.ok += 1
                        continue
                    if r.status_code == 202:
                        self.accepted += 1
                        await asyncio.sleep(ACCEPTED_PAUSE_SECONDS)
                        continue
            except httpx.HTTPError:
                pass
            self.failed += 1
            await asyncio.sleep(RETRY_PAUSE_SECONDS)

    async def _run(self) -> None:
        timeout = httpx.Timeout(120.0, connect=5.0)
        async with httpx.AsyncClient(timeout=timeout) as client:
            await asyncio.gather(*(self._user(client, i) for i in range(self.concurrency)))

    def stop(self) -> None:
        """Ask every user to finish its current request and leave."""
        self._stop.set()


@contextmanager
def live_users(url: str, model: str, concurrency: int = 8) -> Iterator[LiveTraffic]:
    """Users sending streamed chat requests to `url` until the block exits."""
    traffic = LiveTraffic(url=url, model=model, concurrency=concurrency)
    thread = threading.Thread(target=asyncio.run, args=(traffic._run(),), daemon=True)
    thread.start()
    try:
        yield traffic
    finally:
        traffic.stop()
        thread.join(timeout=150)
