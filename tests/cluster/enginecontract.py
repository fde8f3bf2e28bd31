"""The engine contract: what the operator and the load pods rely on an engine's HTTP API to be,
observed the same way on the simulator and on real vLLM.

Why: the simulator (engine-image/specdecode_sim) stands in for vLLM in every verdict test,
so wherever it differs from the real engine the tests prove nothing. `observe` sends one fixed
set of requests to a running engine and reduces the answers to their shape (metric family
names, types, label names and `_created` series; the bodies of /version, /v1/models and
/health; the streamed chunk format with `continuous_usage_stats`; error bodies and status
codes), leaving out what legitimately differs (ids, timestamps, the text, token counts of two
different tokenizers). `differences` compares two observations. Real vLLM's observation is
checked in (tests/data/vllm-<version>-contract.json, written by tests/e2e/
test_engine_contract.py with SPECDECODE_CONTRACT_RECORD=1), so the unit tests hold the
simulator to it cheaply and the e2e test holds the live real engine to the same file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[2]
SERVED_NAME = "contract-model"
PINNED_VERSION = (REPO / "engine-image/VLLM_VERSION").read_text().strip()
MAX_MODEL_LEN = 1024
# n-gram drafting (no draft model), as both engines run it; k = 3.
SPECULATIVE_CONFIG = {
    "method": "ngram",
    "num_speculative_tokens": 3,
    "prompt_lookup_min": 2,
    "prompt_lookup_max": 3,
}
PROMPT = "the model the engine the model the engine the model the engine the model"
# Families the operator reads (operator/specdecode/adapters/metrics/), without `_total`.
FAMILIES = (
    "vllm:spec_decode_num_drafts",
    "vllm:spec_decode_num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens",
    "vllm:spec_decode_num_accepted_tokens_per_pos",
    "vllm:request_success",
    "vllm:inter_token_latency_seconds",
    "vllm:iteration_tokens_total",
    "vllm:num_requests_running",
)
# Start-up refusals: a speculative config vLLM refuses, and a fragment of its error line.
BAD_SPECULATIVE_CONFIGS = {
    "lookup-min-above-max": (
        {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 6,
         "prompt_lookup_max": 3},
        "prompt_lookup_min=6 must be <= prompt_lookup_max=3",
    ),
    "unknown-key": (
        {"method": "ngram", "num_speculative_tokens": 3, "num_lookahead_slots": 4},
        "Unexpected keyword argument",
    ),
}  # fmt: skip


def contract_path(version: str) -> Path:
    """Where real vLLM's observation for `version` is checked in."""
    return REPO / f"tests/data/vllm-{version}-contract.json"


def _shape(value: Any) -> Any:
    """A JSON value reduced to its structure: dicts keep their keys, lists their first
    element's shape, scalars their JSON type."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    if value is None:
        return None
    return type(value).__name__


def _events(body: str) -> list[Any]:
    payloads = [line[len("data: ") :] for line in body.splitlines() if line.startswith("data: ")]
    return [payload if payload == "[DONE]" else json.loads(payload) for payload in payloads]


def _stream(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """One streamed request with per-chunk usage: the shapes of the first, a middle and the
    last chunk, and the facts the load pods' per-chunk timing relies on."""
    reply = client.post(path, json=body)
    events = _events(reply.text)
    chunks = [event for event in events if event != "[DONE]"]
    text_chunks = [chunk for chunk in chunks if chunk.get("choices")]
    usages = [chunk.get("usage") for chunk in chunks]
    completion = [usage["completion_tokens"] for usage in usages if usage]
    return {
        "status": reply.status_code,
        "content_type": reply.headers.get("content-type", "").split(";")[0],
        "ends_with_done": events[-1:] == ["[DONE]"],
        "first_chunk": _shape(chunks[0]),
        "middle_chunk": _shape(text_chunks[len(text_chunks) // 2]),
        "last_chunk": _shape(chunks[-1]),
        "every_chunk_has_usage": all(usage is not None for usage in usages),
        "completion_tokens_never_decrease": completion == sorted(completion),
        "last_usage_counts_max_tokens": bool(completion) and completion[-1] == body["max_tokens"],
        "finish_reason": text_chunks[-1]["choices"][0]["finish_reason"],
    }


def _error(reply: httpx.Response) -> dict[str, Any]:
    body = reply.json()
    error = body.get("error", {})
    message = str(error.get("message", ""))
    return {
        "status": reply.status_code,
        "body": _shape(body),
        "type": error.get("type"),
        "code": error.get("code"),
        "param": error.get("param"),
        # Token counts differ between two tokenizers: numbers are not part of the contract.
        "message": re.sub(r"[0-9]+", "N", message),
    }


def _metrics(text: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for family in text_string_to_metric_families(text):
        # prometheus_client writes a counter's or histogram's `_created` as a gauge family
        # of its own.
        if family.name.removesuffix("_created") not in FAMILIES:
            continue
        samples: dict[str, list[str]] = {}
        values: dict[str, set[str]] = {}
        for sample in family.samples:
            names = samples.setdefault(sample.name, [])
            for label, value in sample.labels.items():
                if label not in names:
                    names.append(label)
                if label in {"engine", "model_name", "position", "le"}:
                    values.setdefault(label, set()).add(value)
        found[family.name] = {
            "type": family.type,
            "samples": {name: sorted(labels) for name, labels in sorted(samples.items())},
            "label_values": {name: sorted(vals) for name, vals in sorted(values.items())},
        }
    return found


def observe(base_url: str) -> dict[str, Any]:
    """The contract as one running engine (served as SERVED_NAME with SPECULATIVE_CONFIG and
    --max-model-len MAX_MODEL_LEN) answers it."""
    with httpx.Client(base_url=base_url, timeout=120.0) as client:
        usage = {"include_usage": True, "continuous_usage_stats": True}
        generate = {"model": SERVED_NAME, "max_tokens": 24, "temperature": 0.0,
                    "ignore_eos": True, "stream": True, "stream_options": usage}  # fmt: skip
        completion = _stream(client, "/v1/completions", generate | {"prompt": PROMPT})
        chat_messages = [{"role": "user", "content": PROMPT}]
        chat = _stream(client, "/v1/chat/completions", generate | {"messages": chat_messages})
        too_long = {"model": SERVED_NAME, "prompt": PROMPT, "max_tokens": 2 * MAX_MODEL_LEN}
        unknown = {"model": "no-such-model", "prompt": PROMPT, "max_tokens": 4}
        version = client.get("/version")
        models = client.get("/v1/models")
        health = client.get("/health")
        return {
            "version": {"status": version.status_code, "body": version.json()},
            "models": {
                "status": models.status_code,
                "body": _shape(models.json()),
                "ids": [model["id"] for model in models.json()["data"]],
                "max_model_len": models.json()["data"][0].get("max_model_len"),
            },
            "health": {"status": health.status_code, "body": health.text},
            "stream_completion": completion,
            "stream_chat": chat,
            "error_bad_request": _error(client.post("/v1/completions", json=too_long)),
            "error_unknown_model": _error(client.post("/v1/completions", json=unknown)),
            "metrics": _metrics(client.get("/metrics").text),
        }


def differences(expected: Any, observed: Any, path: str = "") -> list[str]:
    """Where `observed` departs from `expected`, one line per leaf ("" when they agree)."""
    if isinstance(expected, dict) and isinstance(observed, dict):
        found: list[str] = []
        for key in sorted(set(expected) | set(observed)):
            where = f"{path}.{key}" if path else key
            if key not in observed:
                found.append(f"{where}: missing (expected {json.dumps(expected[key])[:160]})")
            elif key not in expected:
                found.append(f"{where}: unexpected {json.dumps(observed[key])[:160]}")
            else:
                found.extend(differences(expected[key], observed[key], where))
        return found
    if expected != observed:
        return [f"{path}: expected {json.dumps(expected)[:200]}, got {json.dumps(observed)[:200]}"]
    return []


def startup_refusal_line(output: str, fragment: str) -> str | None:
    """The line of a refused start-up's output that carries `fragment`, from the exception's
    type on (log prefixes, times and process names dropped) and without pydantic's echo of
    the input (` [type=..., input_value=...]`, which shows each engine's internals), or None."""
    for line in output.splitlines():
        if fragment in line:
            found = re.search(r"[A-Za-z_.]*(Error|Exception)\b.*", line)
            text = found.group(0) if found else line
            return text.split(" [type=")[0].strip()
    return None


# The simulator with one metric or label renamed inside prometheus_client, for the suite's
# control: the contract must see it.
_MUTATED_SIMULATOR = """
import sys
import prometheus_client.metrics as metrics
rename = dict(pair.split("=") for pair in sys.argv[1].split(",") if pair)
original = metrics.MetricWrapperBase.__init__
def renamed(self, name, documentation, labelnames=(), *args, **kwargs):
    name = rename.get(name, name)
    labelnames = [rename.get(label, label) for label in labelnames]
    original(self, name, documentation, labelnames, *args, **kwargs)
metrics.MetricWrapperBase.__init__ = renamed
from specdecode_sim.cli import main
sys.exit(main(sys.argv[2:]))
"""


def simulator_command(python: str, rename: dict[str, str] | None = None) -> list[str]:
    """`specdecode-sim serve` of the contract's engine (without --host/--port); `rename`
    maps metric or label names to others (the suite's control)."""
    flags = ["serve", "meta-llama/Llama-3.1-8B-Instruct", *serve_flags()]
    if rename is None:
        return [python, "-m", "specdecode_sim.cli", *flags]
    pairs = ",".join(f"{old}={new}" for old, new in rename.items())
    return [python, "-c", _MUTATED_SIMULATOR, pairs, *flags]


def serve_flags(speculative_config: dict[str, Any] | None = None) -> list[str]:
    """The `vllm serve` flags both engines get."""
    config = SPECULATIVE_CONFIG if speculative_config is None else speculative_config
    return ["--served-model-name", SERVED_NAME, "--max-model-len", str(MAX_MODEL_LEN),
            "--seed", "0", "--speculative-config", json.dumps(config)]  # fmt: skip


@dataclass
class RunningEngine:
    """An engine process on loopback, its URL and its output so far."""

    process: subprocess.Popen[bytes]
    base_url: str
    log: IO[bytes]

    def output(self) -> str:
        """Everything the process wrote (stdout and stderr) so far."""
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the engine and its children (vLLM runs its engine core in a child process): the
    engine was started in a session of its own, so its process group is exactly those."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    with contextlib.suppress(ProcessLookupError):  # a child the engine left behind
        os.killpg(process.pid, signal.SIGKILL)


@contextmanager
def running_engine(
    command: list[str], env: dict[str, str], ready_within_s: float
) -> Iterator[RunningEngine]:
    """Start `command --host 127.0.0.1 --port P`, wait until /health answers 200, stop it
    afterwards. Raises RuntimeError with the engine's output if it exits or stays unready."""
    port = _free_port()
    with tempfile.NamedTemporaryFile(prefix="engine-", suffix=".log") as log:
        process = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        engine = RunningEngine(process, f"http://127.0.0.1:{port}", log)
        try:
            deadline = time.monotonic() + ready_within_s
            while not _healthy(engine.base_url):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"engine not ready: {engine.output()[-3000:]}")
                time.sleep(0.5)
            yield engine
        finally:
            _stop(process)


def _healthy(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/health", timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False


def refused_start(command: list[str], env: dict[str, str], within_s: float) -> tuple[int, str]:
    """Run a start-up that should fail: (exit status, output). A start-up that is still
    running after `within_s` is stopped and reported as status 0."""
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(_free_port())],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=within_s)
    except subprocess.TimeoutExpired:
        _stop(process)
        return 0, "still running after the deadline"
    return process.returncode, output.decode(errors="replace")


def engine_env(**overrides: str) -> dict[str, str]:
    """This process's environment plus `overrides`."""
    return {**os.environ, **overrides}
