"""The pod's main process: starts the workers, merges their blocks, serves the report.

It measures nothing, so it may be slow (JSON, files, HTTP) without touching a timestamp.
A worker that dies while the pod is not stopping ends the pod with exit code 1 (the
container restarts and the state dir's restart accounting reports the gap); SIGTERM
stops sending, lets in-flight requests finish (`--drain-seconds`) and exits 0.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import signal
import time
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Any
from urllib.parse import parse_qs, urlsplit

from specdecode.domain.load_report import Gap, LoadReport, report_to_wire
from specdecode.domain.observations import LatencyBlock
from specdecode_load.collector import Collector
from specdecode_load.config import LoadConfig
from specdecode_load.httpserver import serve_http
from specdecode_load.pool import Endpoint, EndpointError, parse_endpoint
from specdecode_load.probe import ProbeWriter
from specdecode_load.schedule import split_concurrency, split_evenly, worker_schedules
from specdecode_load.state import RESTART_REASON, StateDir, Totals
from specdecode_load.worker import WorkerSpec

log = logging.getLogger("specdecode_load")
NO_ENDPOINTS = "engine endpoints (none given: --endpoint or POST /v1/endpoints)"


class Pod:
    """The main process's state: workers, merged blocks, totals, endpoints."""

    def __init__(self, config: LoadConfig) -> None:
        self.config = config
        self.boot_time = time.time()
        self.state = StateDir(config.state_dir, config.max_blocks) if config.state_dir else None
        previous, restored = self.state.load() if self.state else (None, [])
        skip_before = 0.0
        if previous is None:
            self.totals = Totals(first_boot_time=self.boot_time)
        else:
            self.totals = previous
            self.totals.restarts += 1
            warm = self.boot_time + config.restart_warmup_seconds
            skip_before = math.ceil(warm / config.block_seconds) * config.block_seconds
            since = previous.last_block_end or previous.first_boot_time
            self.totals.gaps.append(Gap(since, skip_before, RESTART_REASON))
        self.base_sent, self.base_tokens = self.totals.sent, self.totals.output_tokens
        if self.state is not None:
            self.state.begin_boot(restored)
            self.state.save_totals(self.totals)
        workers = config.processes
        self.schedules = worker_schedules(
            config.shard, config.shards, workers, config.max_requests,
            config.max_output_tokens, self.base_sent, self.base_tokens,
        )  # fmt: skip
        self.collector = Collector(
            range(workers), config.max_blocks, restored, self.totals.gaps, skip_before,
            self._persist,
        )  # fmt: skip
        self.progress = {w: (0, 0, s.cap_reached) for w, s in enumerate(self.schedules)}
        self.endpoints: list[Endpoint] = list(config.endpoints)
        self.controls: dict[int, Connection] = {}
        self.stopping = False
        self.failed = False
        self._all_done = asyncio.Event()

    def specs(self) -> list[WorkerSpec]:
        """One spec per worker: its streams or arrival rate, its schedule."""
        c, workers = self.config, self.config.processes
        streams = split_concurrency(c.concurrency, workers) if c.concurrency else None
        return [
            WorkerSpec(
                worker=w,
                model=c.model,
                seed=c.seed,
                prompts=c.prompts,
                schedule=self.schedules[w],
                concurrency=None if streams is None else streams[w],
                request_rate=None if c.request_rate is None else c.request_rate / workers,
                max_in_flight=max(split_evenly(c.max_in_flight, workers, w), 1),
                request_timeout=c.request_timeout,
                block_seconds=c.block_seconds,
                endpoints=tuple(self.endpoints),
            )
            for w in range(workers)
        ]

    # totals and the report

    @property
    def sent(self) -> int:
        """Requests sent over every boot."""
        return self.base_sent + sum(p[0] for p in self.progress.values())

    @property
    def output_tokens(self) -> int:
        """Tokens received over every boot."""
        return self.base_tokens + sum(p[1] for p in self.progress.values())

    @property
    def cap_reached(self) -> bool:
        """Every worker spent its budget."""
        return all(p[2] for p in self.progress.values())

    def _persist(self, block: LatencyBlock) -> None:
        self.totals = replace(
            self.totals, sent=self.sent, output_tokens=self.output_tokens,
            last_block_end=block.start + block.seconds, gaps=list(self.collector.gaps),
        )  # fmt: skip
        if self.state is not None:
            self.state.append_block(block, self.collector.blocks)
            self.state.save_totals(self.totals)

    def report(self, since: float) -> dict[str, Any]:
        """The LoadReport wire form, plus the stage and plan this pod was started for."""
        c = self.config
        report = LoadReport(
            side=c.side, shard=c.shard, shards=c.shards, processes=c.processes,
            boot_time=self.boot_time, first_boot_time=self.totals.first_boot_time,
            restarts=self.totals.restarts, block_seconds=c.block_seconds, sent=self.sent,
            output_tokens=self.output_tokens, cap_reached=self.cap_reached,
            waiting_for=None if self.endpoints else NO_ENDPOINTS,
            gaps=self.collector.gaps_since(since), blocks=self.collector.blocks_since(since),
            endpoints=tuple(endpoint.url for endpoint in self.endpoints),
        )  # fmt: skip
        return {**report_to_wire(report), "stage": c.stage, "plan": c.plan}

    def handle(self, method: str, target: str, body: bytes) -> tuple[int, Any]:
        """HTTP routes: GET /v1/report?since=, GET /healthz, POST /v1/endpoints."""
        parts = urlsplit(target)
        if method == "GET" and parts.path == "/healthz":
            return (503, {"status": "failed"}) if self.failed else (200, {"status": "ok"})
        if method == "GET" and parts.path == "/v1/report":
            values = parse_qs(parts.query).get("since", ["0"])
            try:
                since = float(values[0])
            except ValueError:
                return 400, {"error": f"since must be unix seconds, got {values[0]!r}"}
            return 200, self.report(since)
        if method == "POST" and parts.path == "/v1/endpoints":
            try:
                urls = json.loads(body or b"{}").get("urls")
                if not isinstance(urls, list):
                    raise ValueError('expected {"urls": ["http://host:port", ...]}')
                endpoints = [parse_endpoint(str(u)) for u in urls]
            except (ValueError, AttributeError, EndpointError) as error:
                return 400, {"error": str(error)}
            self.set_endpoints(endpoints)
            return 200, {"urls": [e.url for e in self.endpoints]}
        return 404, {"error": f"no route {method} {parts.path}"}

    def set_endpoints(self, endpoints: list[Endpoint]) -> None:
        """Forward a new endpoint list to every worker (logged only when it changed)."""
        if endpoints != self.endpoints:
            log.info("endpoints: %s", ", ".join(e.url for e in endpoints) or "none")
        self.endpoints = endpoints
        for control in self.controls.values():
            control.send(("endpoints", endpoints))

    # workers

    def on_message(self, worker: int) -> None:
        """A worker wrote to its control pipe (or exited)."""
        control = self.controls[worker]
        try:
            message = control.recv()
        except (EOFError, OSError):
            message = ("done", worker)
            if not self.stopping:
                log.error("worker %d exited unexpectedly; stopping the pod", worker)
                self.failed = True
                self.stop()
        if message[0] == "block":
            _, _, block, sent, tokens, cap = message
            was_reached = self.cap_reached
            self.progress[worker] = (sent, tokens, cap)
            self.collector.add(worker, block)
            if self.cap_reached and not was_reached:
                log.info("budget spent: %d requests, %d tokens", self.sent, self.output_tokens)
        elif message[0] == "done":
            asyncio.get_running_loop().remove_reader(control.fileno())
            self.collector.worker_done(worker)
            del self.controls[worker]
            if not self.controls:
                self._all_done.set()

    def stop(self) -> None:
        """Stop sending (SIGTERM, or a failed worker)."""
        if not self.stopping:
            log.info("stopping: draining in-flight requests (up to %gs)", self.config.drain_seconds)
        self.stopping = True
        for control in self.controls.values():
            try:
                control.send(("stop",))
            except OSError:
                continue

    async def serve(self, controls: dict[int, Connection], probe_fds: list[int]) -> int:
        """Run until every worker is done; the exit code."""
        loop = asyncio.get_running_loop()
        self.controls = controls
        for worker, control in controls.items():
            loop.add_reader(control.fileno(), self.on_message, worker)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        probes = ProbeWriter(probe_fds)
        probes.start()
        c = self.config
        server = await serve_http(c.listen_host, c.listen_port, self.handle, c.token)
        log.info(
            "%s shard %d/%d: %d workers, listening on %s:%d, %s",
            c.side, c.shard, c.shards, c.processes, c.listen_host, c.listen_port,
            f"restart {self.totals.restarts}" if self.totals.restarts else "first boot",
        )  # fmt: skip
        if not self.endpoints:
            log.info("waiting for %s", NO_ENDPOINTS)
        await self._all_done.wait()
        probes.stop()
        server.close()
        if self.state is not None:
            final = replace(self.totals, sent=self.sent, output_tokens=self.output_tokens)
            self.state.save_totals(final)
        return 1 if self.failed else 0
