"""A lean `vllm bench serve`-like client: closed loop, streamed chat completions.

Raw asyncio HTTP/1.1 (one connection per request, chunked transfer decoding, SSE
events) so that on a shared 2-core machine the client costs far less CPU than the server
it measures. Each SSE event with content is one chunk; its completion-token count comes
from `continuous_usage_stats`. Times are wall seconds / time scale (simulated seconds).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SIM = str(Path(sys.executable).with_name("specdecode-sim"))


@dataclass
class ClientRecord:
    """One request as the client saw it."""

    sent: float
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    tokens: int = 0


def free_port() -> int:
    """An unused loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _get(port: int, path: str) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    raw = await reader.read(-1)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


async def _stream(
    port: int, body: dict[str, Any], record: ClientRecord, now: Callable[[], float]
) -> None:
    payload = json.dumps(body).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
        + payload
    )
    await reader.readuntil(b"\r\n\r\n")
    buffer = b""
    while True:
        size_line = await reader.readline()
        size = int(size_line.strip() or b"0", 16)
        if size == 0:
            break
        buffer += await reader.readexactly(size)
        await reader.readexactly(2)
        stamp = now()
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            data = event[len(b"data: ") :]
            if data == b"[DONE]":
                continue
            chunk = json.loads(data)
            choices = chunk.get("choices") or []
            usage = chunk.get("usage") or {}
            if choices and choices[0].get("delta", {}).get("content"):
                total = int(usage.get("completion_tokens", record.tokens + 1))
                record.chunk_times.append(stamp)
                record.chunk_tokens.append(total - record.tokens)
                record.tokens = total
    writer.close()


async def run_http(
    argv: Callable[[int], list[str]],
    env: dict[str, str],
    bodies: list[dict[str, Any]],
    concurrency: int,
    time_scale: float,
) -> tuple[list[ClientRecord], float, float]:
    """Start a simulator, run the closed loop, stop it: (records, duration, overruns)."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        SIM, *argv(port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        for _ in range(300):
            try:
                if (await _get(port, "/health"))[0] == 200:
                    break
            except OSError:
                pass
            await asyncio.sleep(0.05)
        origin = time.monotonic()

        def now() -> float:
            return (time.monotonic() - origin) / time_scale

        queue = list(reversed(bodies))
        records: list[ClientRecord] = []

        async def worker() -> None:
            while queue:
                body = queue.pop()
                record = ClientRecord(now())
                records.append(record)
                await _stream(port, body, record, now)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        duration = now()
        _, metrics = await _get(port, "/metrics")
        overruns = 0.0
        for line in metrics.decode().splitlines():
            if line.startswith("specdecode_sim_clock_overruns_total"):
                overruns = float(line.split()[-1])
        return records, duration, overruns
    finally:
        process.terminate()
        log = await process.stderr.read() if process.stderr is not None else b""
        await process.wait()
        if os.environ.get("CALIBRATION_SERVER_LOG"):
            sys.stderr.write(log.decode())
