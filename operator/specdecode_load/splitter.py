"""The shadow splitter: each mirrored request to baseline and candidate at the same instant.

Why: a gateway mirrors each shadow on its own, so the two engines see the same workload
but not the same requests. The splitter takes one mirror (`mirror_intake`) and writes it to
both sides back to back, each side timed and recorded like a load pod's.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from specdecode.domain.in_flight import InFlight
from specdecode.domain.load_report import LoadReport, report_to_wire
from specdecode_load.collector import Collector
from specdecode_load.connection import CONNECT_ERROR, StreamConnection, request_bytes
from specdecode_load.httpserver import serve_http
from specdecode_load.mirror_intake import serve_mirror
from specdecode_load.mirror_request import GroupBook, MirroredRequest, NotMirrorable, prepare
from specdecode_load.pool import ConnectionPool, Endpoint, EndpointError, parse_endpoint
from specdecode_load.probe import ProbeReader, ProbeWriter
from specdecode_load.recorder import BlockRecorder
from specdecode_load.splitter_config import SIDES, SplitterConfig

log = logging.getLogger("specdecode_load.splitter")
NO_ENDPOINTS = "engine endpoints (none given: --{side} or POST /v1/endpoints)"


class SplitterSide:
    """One shadow's instrument: recorder, pool, merged blocks, totals."""

    def __init__(
        self,
        name: str,
        config: SplitterConfig,
        connection_class: type[StreamConnection] = StreamConnection,  # benchmarks hook it
    ) -> None:
        self.name = name
        self.collector = Collector([0], config.max_blocks)
        self.recorder = BlockRecorder(config.block_seconds, lambda b: self.collector.add(0, b))
        endpoints = list(config.endpoints[name])
        self.pool = ConnectionPool(self.recorder, endpoints, connection_class)
        timeout = config.request_timeout
        self.recorder.probe_in_flight = lambda at: InFlight.of(self.pool.open_requests(at), timeout)
        self.sent = 0
        self.output_tokens = 0


class Splitter:
    """Both sides, the in-flight cap, and the report routes."""

    def __init__(
        self,
        config: SplitterConfig,
        connection_class: type[StreamConnection] = StreamConnection,
    ) -> None:
        self.config = config
        self.boot_time = time.time()
        self.sides = {name: SplitterSide(name, config, connection_class) for name in SIDES}
        self.groups = GroupBook()
        self.in_flight = 0  # pairs
        self.shed = 0
        self.not_forwarded = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None

    # mirrored requests

    def on_mirrored(self, path: str, workload: bytes | None, body: bytes) -> None:
        """A mirrored request was read and answered 202: forward it or shed it."""
        try:
            request = prepare(path, workload, body)
        except NotMirrorable as error:
            self.not_forwarded += 1
            if self.not_forwarded in (1, 10, 100) or self.not_forwarded % 1000 == 0:
                log.warning("not forwarded (%d so far): %s", self.not_forwarded, error)
            return
        waiting = any(not side.pool.ready.is_set() for side in self.sides.values())
        if waiting or self.in_flight >= self.config.max_in_flight:
            self.shed += 1
            now = time.perf_counter()
            for side in self.sides.values():
                side.recorder.skipped(now, 1)
            return
        self.in_flight += 1
        task = asyncio.ensure_future(self._forward(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _forward(self, request: MirroredRequest) -> None:
        group = self.groups.key(request.group)
        timeout = self.config.request_timeout
        sides = list(self.sides.values())
        try:
            started = time.perf_counter()
            acquired = await asyncio.gather(
                *(side.pool.acquire() for side in sides), return_exceptions=True
            )
            streams: list[tuple[SplitterSide, StreamConnection, asyncio.Future[int]]] = []
            for side, connection in zip(sides, acquired, strict=True):
                if isinstance(connection, BaseException):
                    now = time.perf_counter()
                    message = f"connect: {connection}"[:120]
                    side.recorder.request_end(
                        now, None, None, 0, 0, 0, message, CONNECT_ERROR, now - started
                    )
                    continue
                endpoint = side.pool.endpoint_of(connection)
                host = endpoint.host_header if endpoint else connection.url[len("http://") :]
                data = request_bytes(host, request.body, request.workload, request.path)
                streams.append((side, connection, connection.send(data, timeout, group)))
                side.sent += 1
            for side, connection, stream in streams:
                side.output_tokens += await stream
                side.pool.release(connection)
        finally:
            self.in_flight -= 1

    # block boundaries and shutdown

    def start(self) -> None:
        """Roll both sides' blocks at their boundaries, also while no request runs."""
        now = time.perf_counter()
        for side in self.sides.values():
            if now >= side.recorder.block_end:
                side.recorder.roll(now)
        first = min(side.recorder.block_end for side in self.sides.values())
        delay = max(first - time.perf_counter(), 0.0) + 0.001
        self._timer = asyncio.get_running_loop().call_later(delay, self.start)

    async def drain(self, seconds: float) -> None:
        """Let in-flight pairs end (up to `seconds`), ship what was measured, close."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=seconds)
        if self._timer is not None:
            self._timer.cancel()
        now = time.perf_counter()
        for side in self.sides.values():
            side.recorder.roll(now)
            side.pool.close_all()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # report routes

    def report(self, side: SplitterSide, since: float) -> dict[str, Any]:
        """The LoadReport wire form of one side, like a one-shard load pod's."""
        c = self.config
        report = LoadReport(
            side=side.name, shard=0, shards=1, processes=1, boot_time=self.boot_time,
            first_boot_time=self.boot_time, restarts=0, block_seconds=c.block_seconds,
            sent=side.sent, output_tokens=side.output_tokens, cap_reached=False,
            waiting_for=None if side.pool.endpoints else NO_ENDPOINTS.format(side=side.name),
            gaps=side.collector.gaps_since(since), blocks=side.collector.blocks_since(since),
            endpoints=tuple(endpoint.url for endpoint in side.pool.endpoints),
        )  # fmt: skip
        extra = {"shed": self.shed, "notForwarded": self.not_forwarded}
        return {**report_to_wire(report), "stage": c.stage, "plan": c.plan, "splitter": extra}

    def handle(self, method: str, target: str, body: bytes) -> tuple[int, Any]:
        """GET /healthz, GET /v1/report?side=&since=, POST /v1/endpoints {side, urls}."""
        parts = urlsplit(target)
        query = parse_qs(parts.query)
        if method == "GET" and parts.path == "/healthz":
            return 200, {"status": "ok"}
        if method == "GET" and parts.path == "/v1/report":
            side = self.sides.get(query.get("side", [""])[0])
            if side is None:
                return 400, {"error": f"side must be one of {', '.join(SIDES)}"}
            try:
                since = float(query.get("since", ["0"])[0])
            except ValueError:
                return 400, {"error": "since must be unix seconds"}
            return 200, self.report(side, since)
        if method == "POST" and parts.path == "/v1/endpoints":
            try:
                data = json.loads(body or b"{}")
                side = self.sides.get(data.get("side") or query.get("side", [""])[0])
                urls = data.get("urls")
                if side is None or not isinstance(urls, list):
                    raise ValueError('expected {"side": "baseline", "urls": ["http://h:p"]}')
                endpoints = [parse_endpoint(str(url)) for url in urls]
            except (ValueError, AttributeError, EndpointError) as error:
                return 400, {"error": str(error)}
            self.set_endpoints(side, endpoints)
            return 200, {"side": side.name, "urls": [e.url for e in side.pool.endpoints]}
        return 404, {"error": f"no route {method} {parts.path}"}

    def set_endpoints(self, side: SplitterSide, endpoints: list[Endpoint]) -> None:
        """A side's new endpoint list (logged only when it changed)."""
        if endpoints != side.pool.endpoints:
            log.info("%s endpoints: %s", side.name, ", ".join(e.url for e in endpoints) or "none")
        side.pool.set_endpoints(endpoints)

    async def start_probes(self) -> ProbeWriter:
        """The delay probe of each side's recorder (see `probe`): one pipe per side."""
        loop = asyncio.get_running_loop()
        write_fds = []
        for side in self.sides.values():
            read_fd, write_fd = os.pipe()
            pipe = os.fdopen(read_fd, "rb", buffering=0)
            recorder = side.recorder
            await loop.connect_read_pipe(lambda r=recorder: ProbeReader(r), pipe)  # type: ignore[misc]
            write_fds.append(write_fd)
        writer = ProbeWriter(write_fds)
        writer.start()
        return writer


async def run_splitter(config: SplitterConfig) -> int:
    """Serve until SIGTERM (or SIGINT), then drain; the exit code (0)."""
    loop = asyncio.get_running_loop()
    splitter = Splitter(config)
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    probes = await splitter.start_probes()
    splitter.start()
    c = config
    reports = await serve_http(c.listen_host, c.listen_port, splitter.handle, c.token)
    mirror = await serve_mirror(c.listen_host, c.mirror_port, splitter.on_mirrored)
    log.info(
        "splitter: mirrored requests on %s:%d, reports on %s:%d, at most %d pairs in flight",
        c.listen_host, c.mirror_port, c.listen_host, c.listen_port, c.max_in_flight,
    )  # fmt: skip
    await stopping.wait()
    log.info("stopping: draining in-flight requests (up to %gs)", c.drain_seconds)
    mirror.close()
    await splitter.drain(c.drain_seconds)
    probes.stop()
    reports.close()
    return 0
