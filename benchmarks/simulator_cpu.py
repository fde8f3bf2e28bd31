"""Simulator CPU cost: tokens per server CPU-second per method, and suffix cache growth.

1. HTTP: one simulator per method (H100, Llama-3.1-8B, chat), 64 concurrent streams of
   `--tokens` tokens (ignore_eos, temperature 0.7), streamed through the lean client of
   calibration_client.py; server CPU seconds from /proc/<pid>/stat. The goal is >= 2,000
   tokens per server CPU-second for every method (the operator's e2e runs baseline and
   candidate at up to 64 streams each, real time, on 2 cores).
2. Suffix decoding as its global cache grows to 10,000 responses (engine core, no HTTP):
   CPU microseconds and index operations per proposal, and the whole engine's tokens per
   CPU-second at 64 streams, at cache sizes 0, 100, 1,000 and 10,000.

    .venv/bin/python benchmarks/simulator_cpu.py [--tokens 200] [--requests 128]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine-image"))

import calibration_client

from specdecode_sim.acceptance import AcceptanceModel
from specdecode_sim.engine import EngineCore
from specdecode_sim.engineconfig import EngineConfig, SpecPlan
from specdecode_sim.lookup import suffix_proposal
from specdecode_sim.profiles import HARDWARE, MODELS
from specdecode_sim.request import SimRequest
from specdecode_sim.steptime import kv_capacity_tokens
from specdecode_sim.suffixindex import ResponseCache, SuffixIndex
from specdecode_sim.textgen import REPETITION, TokenStream, tokenize

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
METHODS: dict[str, str | None] = {
    "none": None,
    "ngram k=5": '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}',
    "suffix": '{"method": "suffix"}',
    "eagle3 k=2": '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", '
    '"num_speculative_tokens": 2}',
    "eagle3 k=4": '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", '
    '"num_speculative_tokens": 4}',
}
_WORDS = [
    "what",
    "is",
    "the",
    "best",
    "way",
    "to",
    "learn",
    "about",
    "speculative",
    "decoding",
    "in",
    "large",
    "models",
]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _bodies(count: int, tokens: int) -> list[dict[str, object]]:
    rng = random.Random(7)
    return [
        {
            "messages": [{"role": "user", "content": " ".join(rng.choices(_WORDS, k=60))}],
            "max_tokens": tokens,
            "ignore_eos": True,
            "temperature": 0.7,
            "seed": index,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
        for index in range(count)
    ]


async def _http_row(
    spec: str | None, bodies: list[dict[str, object]], scale: float
) -> tuple[int, float, float, float]:
    port = calibration_client.free_port()
    argv = ["serve", MODEL, "--port", str(port)]
    if spec:
        argv += ["--speculative-config", spec]
    env = {**os.environ, "SPECDECODE_SIM_GPU": "H100", "SPECDECODE_SIM_TIME_SCALE": str(scale)}
    process = await asyncio.create_subprocess_exec(
        calibration_client.SIM,
        *argv,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                if (await calibration_client._get(port, "/health"))[0] == 200:
                    break
            except OSError:
                pass
            await asyncio.sleep(0.05)
        cpu_before, started = _cpu_seconds(process.pid), time.monotonic()
        queue = list(bodies)
        records: list[calibration_client.ClientRecord] = []

        async def worker() -> None:
            while queue:
                record = calibration_client.ClientRecord(0.0)
                records.append(record)
                await calibration_client._stream(port, queue.pop(), record, time.monotonic)

        await asyncio.gather(*(worker() for _ in range(64)))
        wall = time.monotonic() - started
        cpu = _cpu_seconds(process.pid) - cpu_before
        _, metrics = await calibration_client._get(port, "/metrics")
        overruns = sum(
            float(line.split()[-1])
            for line in metrics.decode().splitlines()
            if line.startswith("specdecode_sim_clock_overruns_total")
        )
        return sum(r.tokens for r in records), wall, cpu, overruns
    finally:
        process.terminate()
        await process.wait()


def _suffix_core() -> EngineCore:
    hardware, model = HARDWARE["H100"], MODELS["llama-3.1-8b"]
    return EngineCore(
        EngineConfig(
            hardware=hardware,
            model=model,
            tensor_parallel_size=1,
            max_model_len=8192,
            max_num_seqs=1024,
            max_num_batched_tokens=8192,
            kv_capacity_tokens=kv_capacity_tokens(hardware, model, 1, 0.9),
            spec=SpecPlan("suffix", 24),
            acceptance=AcceptanceModel(),
        )
    )


def _suffix_growth(sizes: list[int]) -> None:
    print(
        "\nSuffix decoding as the global cache grows (engine core, chat, 64 streams x 100 tokens):"
    )
    print(
        "| cached responses | us per proposal | index ops per proposal | engine tokens per CPU-s |"
    )
    print("|---|---|---|---|")
    rng = random.Random(3)
    cache = ResponseCache(24, 10000)
    prompt = tokenize(" ".join(rng.choices(_WORDS, k=60)))
    filled = 0
    for size in sizes:
        while filled < size:
            stream = TokenStream(prompt, random.Random(f"fill{filled}"), REPETITION["chat"])
            cache.add(stream.take(100))
            filled += 1
        histories = []
        for index in range(200):
            own = SuffixIndex(24)
            own.append(own.new_document(), prompt)
            own.append(
                0, TokenStream(prompt, random.Random(f"h{index}"), REPETITION["chat"]).take(50)
            )
            histories.append(own)
        gc.collect()  # settle the fill's garbage so it is not charged to the timed part
        before_ops = cache.index.operations + sum(h.operations for h in histories)
        started = time.process_time()
        for own in histories * 5:
            suffix_proposal(own, cache, 24, 1.0, 100000)
        per_proposal = (time.process_time() - started) / 1000 * 1e6
        cached_now = len(cache)
        ops = (cache.index.operations + sum(h.operations for h in histories) - before_ops) / 1000
        core = _suffix_core()
        core._suffix_cache = cache  # the grown cache, as a long-running server would hold it
        for index in range(64):
            request_prompt = tokenize(" ".join(rng.choices(_WORDS, k=60)))
            history = SuffixIndex(24)
            history.append(history.new_document(), request_prompt)
            core.add(
                SimRequest(
                    request_id=str(index),
                    prompt=request_prompt,
                    max_tokens=100,
                    workload="chat",
                    arrival_ts=0.0,
                    stream=TokenStream(
                        request_prompt, random.Random(f"r{size}:{index}"), REPETITION["chat"]
                    ),
                    natural_length=10**9,
                    rng=random.Random(index),
                    ignore_eos=True,
                    suffix_history=history,
                )
            )
        gc.collect()
        started, now, tokens = time.process_time(), 0.0, 0
        while (report := core.step(now)) is not None:
            now = report.ended
            tokens += report.generation_tokens
        engine_rate = tokens / max(time.process_time() - started, 1e-9)
        print(f"| {cached_now} | {per_proposal:.1f} | {ops:.1f} | {engine_rate:.0f} |")


def main() -> int:
    """Print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--requests", type=int, default=128)
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--skip-http", action="store_true")
    options = parser.parse_args()
    if not options.skip_http:
        print(
            f"HTTP, H100 / Llama-3.1-8B, 64 streams, {options.requests} requests x "
            f"{options.tokens} tokens, time scale {options.time_scale}:"
        )
        print(
            "| method | tokens | wall s | server CPU s | tokens per server CPU-s | clock overruns |"
        )
        print("|---|---|---|---|---|---|")
        bodies = _bodies(options.requests, options.tokens)
        for label, spec in METHODS.items():
            tokens, wall, cpu, overruns = asyncio.run(_http_row(spec, bodies, options.time_scale))
            rate = tokens / cpu
            print(f"| {label} | {tokens} | {wall:.1f} | {cpu:.2f} | {rate:.0f} | {overruns:.0f} |")
    _suffix_growth([0, 100, 1000, 10000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
