"""Helpers for simulator tests: start `specdecode-sim` as a subprocess on a free port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[3]
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
EAGLE3_8B = json.dumps(
    {
        "method": "eagle3",
        "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "num_speculative_tokens": 3,
    }
)


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sim_command(*args: str) -> list[str]:
    """The console script's module, run with this interpreter."""
    return [sys.executable, "-m", "specdecode_sim.cli", *args]


def sim_env(**overrides: str) -> dict[str, str]:
    """Environment without inherited SPECDECODE_SIM_* knobs or SPECDECODE_VLLM_VERSION
    (the pinned release unless overridden), plus overrides."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SPECDECODE_SIM_") and k != "SPECDECODE_VLLM_VERSION"
    }
    env["PYTHONPATH"] = str(REPO / "engine-image")
    env.update(overrides)
    return env


@dataclass
class RunningSim:
    """A simulator subprocess and its base URL."""

    process: subprocess.Popen[str]
    base_url: str

    def stderr_text(self) -> str:
        """What the process wrote to stderr so far (only after it exited)."""
        return self.process.stderr.read() if self.process.stderr else ""


def wait_for_health(base_url: str, process: subprocess.Popen[str], deadline_s: float) -> None:
    """Poll /health until 200; fail with the process output on exit or timeout."""
    deadline = time.monotonic() + deadline_s
    last = "no answer"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read() if process.stderr else ""
            pytest.fail(f"simulator exited with {process.returncode}: {err}")
        try:
            status = httpx.get(f"{base_url}/health", timeout=1.0).status_code
            if status == 200:
                return
            last = f"HTTP {status}"
        except httpx.TransportError as error:
            last = repr(error)
        time.sleep(0.05)
    pytest.fail(f"simulator at {base_url} not healthy within {deadline_s}s (last: {last})")


@contextmanager
def running_simulator(
    *flags: str, env: dict[str, str] | None = None, wait_healthy: bool = True
) -> Iterator[RunningSim]:
    """Start `serve` on a free loopback port; stop it afterwards."""
    port = free_port()
    command = sim_command("serve", *flags, "--host", "127.0.0.1", "--port", str(port))
    process = subprocess.Popen(
        command,
        env=env or sim_env(SPECDECODE_SIM_TIME_SCALE="0.05"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        if wait_healthy:
            wait_for_health(base_url, process, 30.0)
        yield RunningSim(process, base_url)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
