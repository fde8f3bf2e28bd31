"""The real `specdecode-load` process: endpoints pushed, budget, SIGTERM, restart."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from specdecode.domain.load_report import report_from_wire
from specdecode_load.reference import ReferenceEngine, start_reference
from specdecode_load.state import RESTART_REASON

pytestmark = pytest.mark.unit


def child_pids(pid: int) -> list[str]:
    """The worker processes of a running CLI (Linux /proc)."""
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def start_cli(port: int, state: Path, *extra: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "specdecode_load.cli", "--side", "baseline", "--model", "ref",
        "--concurrency", "2", "--processes", "2", "--max-requests", "6", "--max-tokens", "5",
        "--builtin-workload", "chat", "--seed", "0", "--temperature", "0", "--top-p", "1",
        "--request-timeout", "30", "--block-seconds", "0.5", "--restart-warmup-seconds", "0",
        "--listen", f"127.0.0.1:{port}", "--state-dir", str(state), "--allow-no-token", *extra,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def report(client: httpx.AsyncClient, port: int) -> dict[str, Any] | None:
    try:
        answer = await client.get(f"http://127.0.0.1:{port}/v1/report?since=0")
    except httpx.TransportError:
        return None  # not listening yet
    data: dict[str, Any] = answer.json()
    return data


async def poll_until(client: httpx.AsyncClient, port: int, done: Any) -> dict[str, Any]:
    """Poll the report (a condition on another process: there is nothing to await)."""
    for _ in range(600):
        latest = await report(client, port)
        if latest is not None and done(latest):
            return latest
        await asyncio.sleep(0.05)
    raise AssertionError("the load process did not reach the condition in 30 s")


async def test_pushed_endpoints_budget_sigterm_and_restart(tmp_path: Path) -> None:
    engine = ReferenceEngine(step_seconds=[0.005])
    server, engine_port, stepping = await start_reference(engine)
    port = free_port()
    process = await start_cli(port, tmp_path / "state")
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            first = await poll_until(client, port, lambda r: True)
            assert first["waitingFor"] is not None and first["sent"] == 0
            urls = {"urls": [f"http://127.0.0.1:{engine_port}"]}
            pushed = await client.post(f"http://127.0.0.1:{port}/v1/endpoints", json=urls)
            assert pushed.status_code == 200

            def all_answered(r: dict[str, Any]) -> bool:
                return bool(r["capReached"]) and sum(b["requestsOk"] for b in r["blocks"]) == 6

            done = report_from_wire(await poll_until(client, port, all_answered))
            assert done.sent == 6 and done.output_tokens == 30 and done.waiting_for is None
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 20) == 0

            # a restarted container keeps the blocks, reports the gap, spends nothing more
            process = await start_cli(port, tmp_path / "state", "--endpoint", urls["urls"][0])
            again = report_from_wire(await poll_until(client, port, lambda r: True))
            assert again.restarts == 1 and again.sent == 6 and again.cap_reached
            assert [g.reason for g in again.gaps] == [RESTART_REASON]
            assert sum(b.requests_ok for b in again.blocks) == 6
            assert engine.chunks == 6 * 5
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 20)
        stepping.cancel()
        server.close()


async def test_a_dead_worker_ends_the_pod_with_exit_code_1(tmp_path: Path) -> None:
    """The container must restart (and report the gap) rather than measure with a hole."""
    port = free_port()
    process = await start_cli(port, tmp_path / "state")
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            await poll_until(client, port, lambda r: True)
        children = child_pids(process.pid)
        assert len(children) == 2  # --processes 2
        os.kill(int(children[0]), signal.SIGKILL)
        assert await asyncio.wait_for(process.wait(), 20) == 1
        assert process.stderr is not None
        assert b"exited unexpectedly" in await process.stderr.read()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
