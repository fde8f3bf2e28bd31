"""The shadow-load instrument: what the client adds to the latencies it measures.

Why: at production concurrency a client's own lag, not the engines, can set the P99 it
judges. This script measures `specdecode_load`'s client against a reference engine
(`specdecode_load.reference`: one step loop, every chunk stamped with its send time from
CLOCK_MONOTONIC, shared by the processes of one Linux machine) so the delay the client
adds is known per chunk (client arrival stamp - server send stamp), and runs an A/A pair
(two identical engines, one client per side): the P99 ratio of an instrument that adds
nothing is 1. Step times are a seeded list cycled identically by both engines, so the
true A/A ratio is ~1 by construction (printed as "true ratio") and any departure in the
measured ratio is the client's. Rows:

- reference: the load client's `LoadWorker` in its own uvloop process(es) per side (the
  benchmark's per-chunk stamp reading, one regex per event, is included in its CPU);
- httpx control: the operator's old in-process httpx client (`instrument_httpx.stream_chat`);
- simulator: the real `specdecode-load` CLI against two `specdecode-sim` engines at real
  time (SPECDECODE_SIM_TIME_SCALE=1), read through GET /v1/report; delay = its probe.

CPU comes from /proc: our server and client processes, and the whole machine (/proc/stat),
so a level whose processes need more CPU than the rest of the machine left free is marked
as not hostable, and "client runq wait" (/proc/PID/schedstat) says how long a client
process sat runnable without a CPU: such rows show the machine, not the client. Noisy on
a shared machine: compare rows of one run. Long; not run in CI:

    .venv/bin/python benchmarks/instrument.py [--levels 8,32,64,128,256] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import random
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import uvloop

from specdecode.api import TrafficSpec
from specdecode.domain.load_report import report_from_wire
from specdecode.domain.observations import LatencyBlock
from specdecode.domain.prompts import SamplingDefaults, builtin_prompts
from specdecode.domain.sketch import Sketch
from specdecode_load.connection import StreamConnection
from specdecode_load.pool import parse_endpoint
from specdecode_load.reference import ReferenceEngine, start_reference
from specdecode_load.schedule import worker_schedules
from specdecode_load.worker import LoadWorker, WorkerSpec

REPO = Path(__file__).resolve().parents[1]
CORES = os.cpu_count() or 1
TICKS = os.sysconf("SC_CLK_TCK")
_STAMP = re.compile(rb'"t":([0-9.]+)')
MAX_TOKENS = 64
STEP_SECONDS = 0.020
MAX_RUN_QUEUE_WAIT = 0.05  # a client waiting longer for a CPU measures the machine
TRAFFIC = TrafficSpec()  # the CLI run's prompts, sampling and timeout: a rollout's defaults
SAMPLING = SamplingDefaults(temperature=TRAFFIC.temperature, top_p=TRAFFIC.top_p)


def step_list(seed: int = 11, steps: int = 500) -> list[float]:
    """Seeded lognormal step times around 20 ms, cycled by both engines of a pair."""
    rng = random.Random(seed)
    return [STEP_SECONDS * math.exp(rng.gauss(0.0, 0.25)) for _ in range(steps)]


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and its reaped children, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(f) for f in fields[11:15]) / TICKS


def run_queue_wait(pid: int) -> float:
    """Seconds a process sat runnable but waiting for a CPU (/proc/PID/schedstat): how
    much of a row's delay is the machine's, not the client's."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (FileNotFoundError, IndexError, ValueError):
        return 0.0


def machine_busy() -> float:
    """CPU seconds every process of the machine used so far (/proc/stat, all CPUs)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICKS


def child_pids(pid: int) -> list[int]:
    """Live children of a process (the load workers of a CLI)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in children.read_text().split()] if children.exists() else []


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its live children (one level: the load workers)."""
    total = proc_cpu(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else []:
        try:
            total += proc_cpu(int(child))
        except FileNotFoundError:
            continue
    return total


# --- reference engine processes ---


def _server_process(conn: Connection, tokens_per_step: int) -> None:
    async def serve() -> None:
        engine = ReferenceEngine(step_seconds=step_list(), max_tokens_per_step=tokens_per_step)
        _, port, stepping = await start_reference(engine)
        conn.send(port)
        await stepping

    uvloop.run(serve())


def start_servers(count: int) -> list[tuple[multiprocessing.Process, int]]:
    servers = []
    for _ in range(count):
        parent, child = multiprocessing.Pipe()
        process = multiprocessing.Process(target=_server_process, args=(child, 4), daemon=True)
        process.start()
        servers.append((process, int(parent.recv())))
    return servers


def truth(port: int, reset: bool) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/v1/truth{'?reset=1' if reset else ''}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        data: dict[str, Any] = json.loads(answer.read())
        return data


# --- the load client, one process per worker ---


class StampedConnection(StreamConnection):
    """The real connection plus the benchmark's reading of the server's send stamp."""

    delay = Sketch()
    window = (0.0, 0.0)
    events = 0

    def _event(self, event: bytes, now: float) -> None:
        start, end = StampedConnection.window
        if start <= now < end:
            match = _STAMP.search(event)
            if match is not None:
                StampedConnection.delay.add(max(now - float(match.group(1)), 0.0))
                StampedConnection.events += 1
        super()._event(event, now)


def _client_process(
    conn: Connection, port: int, streams: int, worker: int, workers: int, t0: float, t1: float
) -> None:
    async def run() -> None:
        StampedConnection.window = (t0, t1)
        (schedule,) = worker_schedules(0, 1, 1, None, None)
        schedule.worker, schedule.workers = worker, workers
        spec = WorkerSpec(
            worker=worker,
            model="ref",
            seed=5,
            schedule=schedule,
            concurrency=streams,
            prompts=tuple(builtin_prompts("chat", 64, 5, MAX_TOKENS, SAMPLING)),
            request_rate=None,
            max_in_flight=streams,
            request_timeout=60.0,
            block_seconds=1.0,
            endpoints=(parse_endpoint(f"http://127.0.0.1:{port}"),),
        )
        blocks: list[LatencyBlock] = []
        load = LoadWorker(spec, lambda block, _: blocks.append(block), StampedConnection)
        running = asyncio.ensure_future(load.run(drain_seconds=0.5))
        await asyncio.sleep(max(t0 - time.perf_counter(), 0))
        cpu0 = time.process_time()
        wall0 = time.time()
        await asyncio.sleep(max(t1 - time.perf_counter(), 0))
        cpu1 = time.process_time()
        wall1 = time.time()
        load.stop()
        await running
        kept = [b for b in blocks if b.start >= wall0 - 1e-6 and b.start + b.seconds <= wall1]
        chunk, token = Sketch(), Sketch()
        for block in kept:
            chunk.merge(block.per_chunk_itl)
            token.merge(block.per_token_itl)
        merged = sum(b.merged_chunks for b in kept)
        conn.send(
            (
                chunk.counts,
                token.counts,
                StampedConnection.delay.counts,
                StampedConnection.events,
                cpu1 - cpu0,
                merged,
            )
        )

    uvloop.run(run())


@dataclass
class Side:
    chunk: Sketch
    token: Sketch
    delay: Sketch
    events: int
    cpu: float
    merged: int


def run_clients(
    ports: list[int], streams: int, workers: int, t0: float, t1: float
) -> tuple[Callable[[], list[Side]], list[int]]:
    """Start the client processes; the returned function collects their results."""
    pipes, processes = [], []
    for port in ports:
        for w in range(workers):
            share = streams // workers + (1 if w < streams % workers else 0)
            parent, child = multiprocessing.Pipe()
            args = (child, port, share, w, workers, t0, t1)
            process = multiprocessing.Process(target=_client_process, args=args, daemon=True)
            process.start()
            pipes.append((port, parent))
            processes.append(process)

    def collect() -> list[Side]:
        sides = {port: Side(Sketch(), Sketch(), Sketch(), 0, 0.0, 0) for port in ports}
        for port, parent in pipes:
            chunk, token, delay, events, cpu, merged = parent.recv()
            side = sides[port]
            side.chunk.merge(Sketch(chunk))
            side.token.merge(Sketch(token))
            side.delay.merge(Sketch(delay))
            side.events += events
            side.cpu += cpu
            side.merged += merged
        for process in processes:
            process.join()
        return [sides[p] for p in ports]

    return collect, [p.pid or 0 for p in processes]


# --- the old httpx client (control) ---


def _httpx_process(conn: Connection, ports: list[int], streams: int, t0: float, t1: float) -> None:
    """Both sides' streams in one asyncio process, as the operator ran them."""
    import httpx
    from instrument_httpx import stream_chat

    async def run() -> None:
        prompts = builtin_prompts("chat", 64, 5, MAX_TOKENS, SAMPLING)
        chunk = {p: Sketch() for p in ports}
        token = {p: Sketch() for p in ports}
        events = dict.fromkeys(ports, 0)
        wall0 = time.time() + (t0 - time.perf_counter())
        wall1 = wall0 + (t1 - t0)

        async def stream(port: int, index: int, http: httpx.AsyncClient) -> None:
            while time.perf_counter() < t1:
                request = prompts[index % len(prompts)]
                m = await stream_chat(http, f"http://127.0.0.1:{port}", "ref", request, index, 60)
                if m.started_at >= wall0 and time.time() <= wall1:
                    for gap, tokens in zip(m.chunk_gaps, m.chunk_tokens, strict=True):
                        chunk[port].add(gap)
                        token[port].add(gap / tokens, tokens)
                    events[port] += len(m.chunk_gaps) + 1
                index += streams

        limits = httpx.Limits(max_connections=2 * streams + 4)
        async with httpx.AsyncClient(limits=limits) as http:
            tasks = [
                asyncio.ensure_future(stream(p, i, http)) for p in ports for i in range(streams)
            ]
            await asyncio.sleep(max(t0 - time.perf_counter(), 0))
            cpu0 = time.process_time()
            await asyncio.sleep(max(t1 - time.perf_counter(), 0))
            cpu1 = time.process_time()
            await asyncio.gather(*tasks)
        conn.send(
            [(chunk[p].counts, token[p].counts, {}, events[p], (cpu1 - cpu0) / 2, 0) for p in ports]
        )

    asyncio.run(run())


def run_httpx(
    ports: list[int], streams: int, t0: float, t1: float
) -> tuple[Callable[[], list[Side]], list[int]]:
    """Start the control process; the returned function collects its results."""
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.Process(
        target=_httpx_process, args=(child, ports, streams, t0, t1), daemon=True
    )
    process.start()

    def collect() -> list[Side]:
        answer = parent.recv()
        process.join()
        return [Side(Sketch(c), Sketch(t), Sketch(d), e, cpu, m) for c, t, d, e, cpu, m in answer]

    return collect, [process.pid or 0]


# --- rows ---


@dataclass
class Row:
    client: str
    streams: int
    processes: int
    chunks_per_s: float
    client_cores: float
    server_cores: float
    delay_p50: float | None
    delay_p99: float | None
    p99: tuple[float, float]
    token_p99: tuple[float, float]
    true_ratio: float | None
    merged: float
    load_average: float = 0.0  # the machine's 1-minute load average after the row
    waiting: float | None = None  # share of time a client process waited for a CPU
    available_cores: float = float(CORES)  # cores minus what other processes used

    @property
    def ratio(self) -> float:
        return self.p99[1] / self.p99[0]

    @property
    def token_ratio(self) -> float:
        return self.token_p99[1] / self.token_p99[0]

    @property
    def per_core(self) -> float:
        return self.chunks_per_s / self.client_cores if self.client_cores else float("nan")

    @property
    def hostable(self) -> bool:
        """Our processes' CPU fit in what the rest of the machine left free, and the client
        rarely waited for a CPU (a saturated machine lets others fill any free core)."""
        starved = self.waiting is not None and self.waiting > MAX_RUN_QUEUE_WAIT
        return not starved and self.client_cores + self.server_cores <= self.available_cores


def reference_row(client: str, streams: int, workers: int, seconds: float, warmup: float) -> Row:
    servers = start_servers(2)
    ports = [port for _, port in servers]
    t0 = time.perf_counter() + warmup + 1.0  # client processes start within the extra second
    t1 = t0 + seconds
    try:
        if client == "httpx":
            collect, pids = run_httpx(ports, streams, t0, t1)
        else:
            collect, pids = run_clients(ports, streams, workers, t0, t1)
        time.sleep(max(t0 - time.perf_counter(), 0))
        cpu0 = [proc_cpu(p.pid or 0) for p, _ in servers]
        busy0 = machine_busy()
        wait0 = sum(run_queue_wait(pid) for pid in pids)
        for port in ports:
            truth(port, reset=True)  # the truth covers the measured window only
        time.sleep(max(t1 - time.perf_counter(), 0))
        truths = [truth(port, reset=False) for port in ports]
        cpu1 = [proc_cpu(p.pid or 0) for p, _ in servers]
        busy = (machine_busy() - busy0) / seconds
        waited = (sum(run_queue_wait(pid) for pid in pids) - wait0) / seconds / len(pids)
        server_cores = sum(b - a for a, b in zip(cpu0, cpu1, strict=True)) / seconds
        sides = collect()
    finally:
        for process, _ in servers:
            process.kill()
    true_p99 = [Sketch.from_wire(t["perChunkItl"]).quantile(0.99) for t in truths]
    delay = Sketch()
    for side in sides:
        delay.merge(side.delay)
    events = sum(s.events for s in sides)
    return Row(
        client=client,
        streams=streams,
        processes=workers if client != "httpx" else 1,
        chunks_per_s=events / seconds,
        client_cores=sum(s.cpu for s in sides) / seconds,
        server_cores=server_cores,
        delay_p50=delay.quantile(0.5) if delay.total else None,
        delay_p99=delay.quantile(0.99) if delay.total else None,
        p99=(sides[0].chunk.quantile(0.99), sides[1].chunk.quantile(0.99)),
        token_p99=(sides[0].token.quantile(0.99), sides[1].token.quantile(0.99)),
        load_average=os.getloadavg()[0],
        waiting=waited,
        available_cores=CORES - (busy - server_cores - sum(s.cpu for s in sides) / seconds),
        true_ratio=true_p99[1] / true_p99[0],
        merged=sum(s.merged for s in sides) / max(events, 1),
    )


# --- the real CLI against two simulators ---


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, deadline_s: float = 60.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {deadline_s}s")


def sim_row(streams: int, workers: int, seconds: float, warmup: float) -> Row:
    model = "meta-llama/Llama-3.1-8B-Instruct"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECDECODE_SIM_")}
    env["SPECDECODE_SIM_TIME_SCALE"] = "1"
    bin_dir = Path(sys.executable).parent
    sims, loads = [], []
    try:
        for _ in range(2):
            port = free_port()
            command = [
                str(bin_dir / "specdecode-sim"),
                "serve",
                model,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ]
            sims.append(
                (
                    subprocess.Popen(
                        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                    ),
                    port,
                )
            )
        for _, port in sims:
            wait_http(f"http://127.0.0.1:{port}/health")
        for role, (_, port) in zip(("baseline", "candidate"), sims, strict=True):
            listen = free_port()
            command = [
                str(bin_dir / "specdecode-load"),
                "--allow-no-token",  # a local run: no rollout, no Secret
                "--side",
                role,
                "--model",
                model,
                "--endpoint",
                f"http://127.0.0.1:{port}",
                "--concurrency",
                str(streams),
                "--processes",
                str(workers),
                "--max-tokens",
                "128",
                "--builtin-workload",
                TRAFFIC.builtin_workload,
                "--temperature",
                str(TRAFFIC.temperature),
                "--top-p",
                str(TRAFFIC.top_p),
                "--request-timeout",
                str(TRAFFIC.request_timeout_seconds),
                "--block-seconds",
                "1",
                "--listen",
                f"127.0.0.1:{listen}",
                "--seed",
                "5",
            ]
            loads.append(
                (
                    subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                    listen,
                )
            )
        for _, listen in loads:
            wait_http(f"http://127.0.0.1:{listen}/healthz")
        time.sleep(warmup)
        wall0 = math.ceil(time.time())
        cpu0 = [tree_cpu(p.pid) for p, _ in loads] + [proc_cpu(p.pid) for p, _ in sims]
        busy0 = machine_busy()
        workers_pids = [c for p, _ in loads for c in child_pids(p.pid)]
        wait0 = sum(run_queue_wait(pid) for pid in workers_pids)
        time.sleep(seconds + 2.5)  # the last block must be complete when read
        cpu1 = [tree_cpu(p.pid) for p, _ in loads] + [proc_cpu(p.pid) for p, _ in sims]
        busy = (machine_busy() - busy0) / (seconds + 2.5)
        wait1 = sum(run_queue_wait(pid) for pid in workers_pids)
        reports = []
        for _, listen in loads:
            url = f"http://127.0.0.1:{listen}/v1/report?since={wall0}"
            with urllib.request.urlopen(url, timeout=10) as answer:
                reports.append(report_from_wire(json.loads(answer.read())))
    finally:
        for process, _ in loads + sims:
            process.terminate()
        for process, _ in loads + sims:
            process.wait(timeout=30)
    elapsed = seconds + 2.5
    used = [c1 - c0 for c0, c1 in zip(cpu0, cpu1, strict=True)]
    sides = []
    for report in reports:
        kept = [b for b in report.blocks if b.start + b.seconds <= wall0 + seconds]
        chunk, token, delay = Sketch(), Sketch(), Sketch()
        for block in kept:
            chunk.merge(block.per_chunk_itl)
            token.merge(block.per_token_itl)
            delay.merge(block.client_delay)
        events = sum(b.chunks for b in kept) + sum(b.requests_ok for b in kept)
        merged = sum(b.merged_chunks for b in kept)
        sides.append(Side(chunk, token, delay, events, 0.0, merged))
    delay = Sketch()
    for side in sides:
        delay.merge(side.delay)
    events = sum(s.events for s in sides)
    return Row(
        client="cli vs sim",
        streams=streams,
        processes=workers,
        chunks_per_s=events / seconds,
        client_cores=sum(used[:2]) / elapsed,
        server_cores=sum(used[2:]) / elapsed,
        delay_p50=delay.quantile(0.5),
        delay_p99=delay.quantile(0.99),
        p99=(sides[0].chunk.quantile(0.99), sides[1].chunk.quantile(0.99)),
        token_p99=(sides[0].token.quantile(0.99), sides[1].token.quantile(0.99)),
        load_average=os.getloadavg()[0],
        waiting=(wait1 - wait0) / elapsed / max(len(workers_pids), 1),
        available_cores=CORES - (busy - sum(used) / elapsed),
        true_ratio=None,
        merged=sum(s.merged for s in sides) / max(events, 1),
    )


# --- output ---


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.3f}"


def print_rows(title: str, rows: list[Row]) -> None:
    if not rows:
        return
    print(f"\n{title}")
    print(
        "| client | streams/side | procs/side | chunks/s | client cores | chunks/s/core "
        "| server cores | delay P50 ms | delay P99 ms | P99 A / B ms | A/A chunk | A/A token "
        "| true A/A | merged | load avg | client runq wait | hostable |"
    )
    print("|" + "---|" * 17)
    for r in rows:
        print(
            f"| {r.client} | {r.streams} | {r.processes} | {r.chunks_per_s:,.0f} "
            f"| {r.client_cores:.2f} | {r.per_core:,.0f} | {r.server_cores:.2f} "
            f"| {ms(r.delay_p50)} | {ms(r.delay_p99)} | {ms(r.p99[0])} / {ms(r.p99[1])} "
            f"| {r.ratio:.3f} | {r.token_ratio:.3f} "
            f"| {'-' if r.true_ratio is None else f'{r.true_ratio:.3f}'} "
            f"| {r.merged:.1%} | {r.load_average:.1f} "
            f"| {'-' if r.waiting is None else f'{r.waiting:.1%}'} "
            f"| {'yes' if r.hostable else f'NO ({r.available_cores:.1f} cores free)'} |",
            flush=True,
        )


def processes_for(streams: int) -> int:
    """Client processes per side: one per ~64 streams (a burst of 64 chunks at ~15 µs is
    ~1 ms), at most the cores."""
    return max(1, min(math.ceil(streams / 64), CORES))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="8,32,64,128,256")
    parser.add_argument("--control-levels", default="32,128")
    parser.add_argument("--sim-levels", default="8,32,64,128,256")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",") if x]
    print(
        f"cores: {CORES}; load average before: {os.getloadavg()[0]:.2f}; "
        f"{args.seconds:g} s measured after {args.warmup:g} s; steps ~{STEP_SECONDS * 1000:g} ms "
        "lognormal, 1-4 tokens per chunk, 64 tokens per request"
    )
    rows = [
        reference_row("specdecode-load", n, processes_for(n), args.seconds, args.warmup)
        for n in levels
    ]
    rows += [
        reference_row("specdecode-load", n, 1, args.seconds, args.warmup)
        for n in levels
        if processes_for(n) > 1
    ]
    print_rows("Reference engine pair (delay = client arrival - server send stamp)", rows)
    control = [
        reference_row("httpx", int(n), 1, args.seconds, args.warmup)
        for n in args.control_levels.split(",")
        if n
    ]
    print_rows("Control: the operator's old httpx client, both sides in one process", control)
    sim_levels = [int(x) for x in args.sim_levels.split(",") if x]
    sims = [sim_row(n, processes_for(n), args.seconds, args.warmup) for n in sim_levels]
    print_rows("The real CLI against two simulators (delay = the probe)", sims)
    print_sizing(rows)


def print_sizing(rows: list[Row]) -> None:
    """What a load process can carry: CPU per chunk, and the rows that met the delay bar."""
    ours = [r for r in rows if r.client == "specdecode-load" and r.client_cores > 0]
    if not ours:
        return
    per_core = sorted(r.per_core for r in ours)[len(ours) // 2]
    print(
        f"\nCPU: median {per_core:,.0f} chunks/s per busy core ({1e6 / per_core:.0f} us per "
        f"chunk, all costs in); with 50 % headroom plan {per_core / 2:,.0f} chunks/s per "
        "process, one core each."
    )
    good = [r for r in ours if r.delay_p99 is not None and r.delay_p99 <= 0.001]
    for r in good:
        print(
            f"met P99 delay <= 1 ms: {r.streams} streams/side on {r.processes} process(es) "
            f"per side, {r.chunks_per_s / (2 * r.processes):,.0f} chunks/s per process"
        )
    if not good:
        print("no row met P99 delay <= 1 ms on this machine (see client runq wait)")
    print(
        "A burst (every stream's chunk of one engine step at once) is stamped one chunk "
        f"per ~{1e6 / per_core:.0f} us, so a process sees its last chunk of a dense burst "
        f"{1e3 / per_core:.3f} ms late per stream: <= {int(per_core / 1000)} streams per "
        "process keep even a dense burst within 1 ms."
    )


if __name__ == "__main__":
    main()
