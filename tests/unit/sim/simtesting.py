"""Helpers for simulator tests: start `specdecode-sim` as a subprocess on a free port, or
drive an EngineCore in-process with fake time."""

from __future__ import annotations

import json
import os
import random
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

from specdecode_sim.acceptance import AcceptanceModel
from specdecode_sim.engine import EngineConfig, EngineCore, SpecPlan
from specdecode_sim.lookup import NgramIndex
from specdecode_sim.profiles import HARDWARE, MODELS
from specdecode_sim.request import SimRequest, StepReport
from specdecode_sim.textgen import REPETITION, TokenStream, tokenize

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


def make_core(
    spec: SpecPlan | None = None,
    acceptance: float | None = None,
    max_num_seqs: int = 64,
    kv_capacity_tokens: int = 400_000,
) -> EngineCore:
    return EngineCore(
        EngineConfig(
            hardware=HARDWARE["H100"],
            model=MODELS["llama-3.1-8b"],
            tensor_parallel_size=1,
            max_model_len=8192,
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=8192,
            kv_capacity_tokens=kv_capacity_tokens,
            spec=spec,
            acceptance=AcceptanceModel(constant=acceptance),
        )
    )


def make_request(
    core: EngineCore, index: int, prompt: str, workload: str = "chat", max_tokens: int = 64
) -> SimRequest:
    tokens = tokenize(prompt)
    lookup = None
    spec = core.config.spec
    if spec is not None and spec.method == "ngram":
        lookup = NgramIndex(spec.prompt_lookup_min, spec.prompt_lookup_max)
        lookup.extend(tokens)
    return SimRequest(
        request_id=f"r{index}",
        prompt=tokens,
        max_tokens=max_tokens,
        workload=workload,
        arrival_ts=0.0,
        stream=TokenStream(tokens, random.Random(f"text{index}"), REPETITION[workload]),
        natural_length=10**9,
        rng=random.Random(f"accept{index}"),
        ignore_eos=True,
        lookup_index=lookup,
    )


def run(core: EngineCore) -> list[StepReport]:
    reports: list[StepReport] = []
    now = 0.0
    for _ in range(100_000):
        report = core.step(now)
        if report is None:
            return reports
        reports.append(report)
        now = report.ended
    raise AssertionError("engine did not drain")


def spec_totals(reports: list[StepReport]) -> tuple[int, int, int, list[int]]:
    drafts = draft_tokens = accepted = 0
    per_position: list[int] = []
    for report in reports:
        if report.spec is None:
            continue
        drafts += report.spec.drafts
        draft_tokens += report.spec.draft_tokens
        accepted += report.spec.accepted_tokens
        per_position = [
            a + b
            for a, b in zip(
                per_position or [0] * len(report.spec.accepted_per_position),
                report.spec.accepted_per_position,
                strict=True,
            )
        ]
    return drafts, draft_tokens, accepted, per_position
