"""Paired shadow load: every request goes to baseline and candidate at the same moment.

Closed loop (`concurrency` workers, each waiting for both answers before the next request)
keeps the same number of requests in flight on both engines; open loop (`request_rate`,
Poisson arrivals) models production arrival, with a cap on requests in flight so a slow
engine cannot grow memory without bound. Prompts are sampled with a seeded RNG, so a
re-run replays the same sequence.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from specdecode.adapters.traffic.client import stream_chat
from specdecode.adapters.traffic.prompts import ShadowRequest
from specdecode.adapters.traffic.recorder import LatencyRecorder
from specdecode.domain.observations import LatencySamples

EndpointResolver = Callable[[], Awaitable[list[str]]]
ENDPOINT_REFRESH_SECONDS = 10.0
NO_ENDPOINT_RETRY_SECONDS = 1.0
MAX_IN_FLIGHT_OPEN_LOOP = 1024


@dataclass(frozen=True)
class DriverConfig:
    """The load shape and request options of one stage."""

    model: str
    concurrency: int | None
    request_rate: float | None
    seed: int
    timeout_seconds: float
    max_requests: int | None
    max_samples: int


class _Endpoints:
    """A resolver's answer, refreshed periodically, served round-robin."""

    def __init__(self, resolve: EndpointResolver) -> None:
        self._resolve = resolve
        self._urls: list[str] = []
        self._fetched_at = -1e9

    async def pick(self, index: int) -> str | None:
        if not self._urls or time.monotonic() - self._fetched_at > ENDPOINT_REFRESH_SECONDS:
            self._urls = await self._resolve()
            self._fetched_at = time.monotonic()
        return self._urls[index % len(self._urls)] if self._urls else None


class PairedDriver:
    """`ShadowTraffic` that replays a prompt set against two engines at once."""

    def __init__(
        self,
        config: DriverConfig,
        prompts: list[ShadowRequest],
        baseline: EndpointResolver,
        candidate: EndpointResolver,
        http: httpx.AsyncClient,
    ) -> None:
        if not prompts:
            raise ValueError("no prompts to replay")
        self._config = config
        self._prompts = prompts
        self._targets = (_Endpoints(baseline), _Endpoints(candidate))
        self._http = http
        self._recorders = (
            LatencyRecorder(config.max_samples, config.seed),
            LatencyRecorder(config.max_samples, config.seed + 1),
        )
        self._rng = random.Random(config.seed)
        self._sent = 0
        self.waiting_for: str | None = None  # transient: e.g. endpoints not published yet

    @property
    def error(self) -> str | None:
        """Replaying a valid prompt set never fails for good; engine errors are samples."""
        return None

    def snapshot(self, since: float, now: float) -> tuple[LatencySamples, LatencySamples]:
        """(baseline, candidate) samples since `since`."""
        baseline, candidate = self._recorders
        return baseline.snapshot(since, now), candidate.snapshot(since, now)

    async def run(self) -> None:
        """Drive load until cancelled or `max_requests` pairs were sent."""
        if self._config.concurrency is not None:
            workers = [self._closed_loop_worker() for _ in range(self._config.concurrency)]
            await asyncio.gather(*workers)
        else:
            await self._open_loop()

    def _next_index(self) -> int | None:
        cap = self._config.max_requests
        if cap is not None and self._sent >= cap:
            return None
        self._sent += 1
        return self._sent - 1

    async def _closed_loop_worker(self) -> None:
        while (index := self._next_index()) is not None:
            await self._send_pair(index)

    async def _open_loop(self) -> None:
        rate = self._config.request_rate or 1.0
        in_flight = asyncio.Semaphore(MAX_IN_FLIGHT_OPEN_LOOP)
        tasks: set[asyncio.Task[None]] = set()

        async def one(index: int) -> None:
            async with in_flight:
                await self._send_pair(index)

        while (index := self._next_index()) is not None:
            task = asyncio.create_task(one(index))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            await asyncio.sleep(self._rng.expovariate(rate))  # Poisson arrivals, by design
        await asyncio.gather(*tasks)

    async def _send_pair(self, index: int) -> None:
        urls = [await target.pick(index) for target in self._targets]
        if None in urls:
            self.waiting_for = "ready endpoints of the baseline and candidate Services"
            self._sent -= 1  # nothing was sent: the cost cap counts only real requests
            await asyncio.sleep(NO_ENDPOINT_RETRY_SECONDS)  # pacing, not a condition wait
            return
        self.waiting_for = None
        request = self._prompts[self._rng.randrange(len(self._prompts))]
        seed = self._config.seed + index
        results = await asyncio.gather(
            *(
                stream_chat(
                    self._http, url, self._config.model, request, seed, self._config.timeout_seconds
                )
                for url in urls
                if url is not None
            )
        )
        for recorder, measurement in zip(self._recorders, results, strict=True):
            recorder.record(measurement)
