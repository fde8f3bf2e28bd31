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
from specdecode.domain.prompts import ShadowRequest
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
    max_output_tokens: int | None = None


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


class _EngineStream:
    """One engine's copy of the request stream: same requests, same order, own pace."""

    def __init__(self, target: _Endpoints, recorder: LatencyRecorder, seed: int) -> None:
        self.target = target
        self.recorder = recorder
        self.order = random.Random(seed)  # same seed on both sides: request i is identical
        self.arrivals = random.Random(seed + 1)  # same arrival schedule on both sides
        self.sent = 0
        self.output_tokens = 0


class PairedDriver:
    """`ShadowTraffic` that replays one prompt stream against two engines.

    Each engine gets the identical sequence of requests (prompt i and seed i are the same
    on both sides) at the stage's concurrency or arrival rate, but at its own pace: a
    faster candidate is never held back waiting for the baseline's answer, which would
    lower its real concurrency and flatter its tail latency.
    """

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
        self._http = http
        self._streams = tuple(
            _EngineStream(
                _Endpoints(resolve),
                LatencyRecorder(config.max_samples, config.seed + i),
                config.seed,
            )
            for i, resolve in enumerate((baseline, candidate))
        )
        self.waiting_for: str | None = None  # transient: e.g. endpoints not published yet

    @property
    def error(self) -> str | None:
        """Replaying a valid prompt set never fails for good; engine errors are samples."""
        return None

    def snapshot(self, since: float, now: float) -> tuple[LatencySamples, LatencySamples]:
        """(baseline, candidate) samples since `since`."""
        baseline, candidate = (stream.recorder for stream in self._streams)
        return baseline.snapshot(since, now), candidate.snapshot(since, now)

    async def run(self) -> None:
        """Drive both engines until cancelled or each got `max_requests` requests."""
        await asyncio.gather(*(self._drive(stream) for stream in self._streams))

    async def _drive(self, stream: _EngineStream) -> None:
        if self._config.concurrency is not None:
            workers = [self._closed_loop_worker(stream) for _ in range(self._config.concurrency)]
            await asyncio.gather(*workers)
        else:
            await self._open_loop(stream)

    def _next(self, stream: _EngineStream) -> tuple[int, ShadowRequest] | None:
        cap, token_cap = self._config.max_requests, self._config.max_output_tokens
        if cap is not None and stream.sent >= cap:
            return None
        if token_cap is not None and stream.output_tokens >= token_cap:
            return None
        stream.sent += 1
        return stream.sent - 1, self._prompts[stream.order.randrange(len(self._prompts))]

    async def _closed_loop_worker(self, stream: _EngineStream) -> None:
        while (item := self._next(stream)) is not None:
            await self._send(stream, *item)

    async def _open_loop(self, stream: _EngineStream) -> None:
        rate = self._config.request_rate or 1.0
        in_flight = asyncio.Semaphore(MAX_IN_FLIGHT_OPEN_LOOP)
        tasks: set[asyncio.Task[None]] = set()

        async def one(index: int, request: ShadowRequest) -> None:
            async with in_flight:
                await self._send(stream, index, request)

        while (item := self._next(stream)) is not None:
            task = asyncio.create_task(one(*item))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            await asyncio.sleep(stream.arrivals.expovariate(rate))  # Poisson arrivals
        await asyncio.gather(*tasks)

    async def _send(self, stream: _EngineStream, index: int, request: ShadowRequest) -> None:
        url = await stream.target.pick(index)
        while url is None:
            self.waiting_for = "ready endpoints of the baseline and candidate Services"
            await asyncio.sleep(NO_ENDPOINT_RETRY_SECONDS)  # pacing, not a condition wait
            url = await stream.target.pick(index)
        self.waiting_for = None
        measurement = await stream_chat(
            self._http,
            url,
            self._config.model,
            request,
            self._config.seed + index,
            self._config.timeout_seconds,
        )
        stream.output_tokens += measurement.output_tokens
        stream.recorder.record(measurement)
