"""Benchmark tables for the README (not timed tests): `python -m specdecode_sim.bench`.

1. Step law at concurrency 1: simulated tokens/step vs (1 - a^(k+1)) / (1 - a), and the
   speedup once the draft overhead is paid.
2. Concurrency sweep through the engine core (simulated time): per-chunk ITL and time
   per output token, plain vs EAGLE-3, and the break-even concurrency.
3. With --live: one simulator process serving N concurrent streams; streamed tokens/s
   and server CPU seconds (from /proc) to show what one core sustains.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from specdecode_sim.acceptance import AcceptanceModel, expected_tokens_per_step
from specdecode_sim.draft import break_even_concurrency
from specdecode_sim.engine import EngineConfig, EngineCore, SpecPlan
from specdecode_sim.profiles import HARDWARE, MODELS
from specdecode_sim.request import SimRequest
from specdecode_sim.steptime import kv_capacity_tokens
from specdecode_sim.textgen import REPETITION, TokenStream, tokenize


def _core(gpu: str, model: str, tp: int, spec: SpecPlan | None, alpha: float) -> EngineCore:
    hardware, profile = HARDWARE[gpu], MODELS[model]
    return EngineCore(
        EngineConfig(
            hardware=hardware,
            model=profile,
            tensor_parallel_size=tp,
            max_model_len=8192,
            max_num_seqs=1024,
            max_num_batched_tokens=8192,
            kv_capacity_tokens=kv_capacity_tokens(hardware, profile, tp, 0.9),
            spec=spec,
            acceptance=AcceptanceModel(constant=alpha),
        )
    )


def run_batch(
    gpu: str,
    model: str,
    tp: int,
    spec: SpecPlan | None,
    alpha: float,
    concurrency: int,
    max_tokens: int = 256,
) -> tuple[float, float, float]:
    """(mean per-chunk ITL, mean TPOT, tokens per decode chunk) for `concurrency` requests."""
    core = _core(gpu, model, tp, spec, alpha)
    prompt = tokenize("word " * 512)
    requests = [
        SimRequest(
            request_id=str(i),
            prompt=prompt,
            max_tokens=max_tokens,
            workload="chat",
            arrival_ts=0.0,
            stream=TokenStream(prompt, random.Random(i), REPETITION["chat"]),
            natural_length=10**9,
            rng=random.Random(f"a{i}"),
            ignore_eos=True,
        )
        for i in range(concurrency)
    ]
    for request in requests:
        core.add(request)
    itls: list[float] = []
    chunk_sizes: list[int] = []
    now = 0.0
    while (report := core.step(now)) is not None:
        now = report.ended
        for emission in report.emissions:
            if emission.inter_token_latency is not None:
                itls.append(emission.inter_token_latency)
                chunk_sizes.append(len(emission.tokens))
    tpots = [
        ((r.last_token_ts or 0.0) - (r.first_token_ts or 0.0)) / (len(r.output) - 1)
        for r in requests
    ]
    return statistics.fmean(itls), statistics.fmean(tpots), statistics.fmean(chunk_sizes)


def step_law_table() -> None:
    """Concurrency 1, Llama-3.1-8B on H100, EAGLE-3 k=3 with forced constant acceptance."""
    print("## Step law at concurrency 1 (H100, llama-3.1-8b, eagle3 k=3, 6,000 tokens)\n")
    print(
        "| a | law tokens/step | simulated tokens/chunk | TPOT plain ms | TPOT spec ms | speedup |"
    )
    print("|---|---|---|---|---|---|")
    _, plain_tpot, _ = run_batch("H100", "llama-3.1-8b", 1, None, 0.0, 1)
    for alpha in (0.3, 0.5, 0.6, 0.7, 0.8, 0.9):
        _, tpot, chunk = run_batch(
            "H100", "llama-3.1-8b", 1, SpecPlan("eagle3", 3), alpha, 1, max_tokens=6000
        )
        law = expected_tokens_per_step(alpha, 3)
        print(
            f"| {alpha:.1f} | {law:.2f} | {chunk:.2f} | {plain_tpot * 1e3:.2f} "
            f"| {tpot * 1e3:.2f} | {plain_tpot / tpot:.2f}x |"
        )
    print()


def sweep_table(gpu: str, model: str, tp: int, alpha: float) -> None:
    """Per-chunk ITL and TPOT vs concurrency, plain vs EAGLE-3."""
    crossover = break_even_concurrency(
        HARDWARE[gpu], MODELS[model], tp, k=3, alpha=alpha, context_len=640
    )
    print(f"## {gpu} x{tp}, {model}, eagle3 k=3, a={alpha} (break-even c = {crossover})\n")
    print(
        "| c | ITL/chunk plain ms | ITL/chunk spec ms | TPOT plain ms | TPOT spec ms | spec wins |"
    )
    print("|---|---|---|---|---|---|")
    for concurrency in (1, 4, 10, 32, 64, 128, 256):
        itl_p, tpot_p, _ = run_batch(gpu, model, tp, None, alpha, concurrency)
        itl_s, tpot_s, _ = run_batch(gpu, model, tp, SpecPlan("eagle3", 3), alpha, concurrency)
        print(
            f"| {concurrency} | {itl_p * 1e3:.1f} | {itl_s * 1e3:.1f} | {tpot_p * 1e3:.2f} "
            f"| {tpot_s * 1e3:.2f} | {'yes' if tpot_s < tpot_p else 'no'} |"
        )
    print()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _live(port: int, streams: int, max_tokens: int) -> tuple[int, float]:
    import httpx

    url = f"http://127.0.0.1:{port}/v1/completions"
    body = {"prompt": "hello " * 64, "max_tokens": max_tokens, "stream": True, "ignore_eos": True}
    async with httpx.AsyncClient(timeout=120) as client:

        async def one() -> int:
            words = 0
            async with client.stream("POST", url, json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        words += len(json.loads(line[6:])["choices"][0]["text"].split())
            return words

        start = time.monotonic()
        counts = await asyncio.gather(*(one() for _ in range(streams)))
        return sum(counts), time.monotonic() - start


def live_table(streams: int, max_tokens: int, time_scale: str, spec: str | None) -> None:
    """One simulator process under N concurrent streams (tokens counted from the text)."""
    port = 18000 + os.getpid() % 1000
    env = {**os.environ, "SPECDECODE_SIM_TIME_SCALE": time_scale}
    command = [sys.executable, "-m", "specdecode_sim.cli", "serve", "meta-llama/Llama-3.1-8B"]
    if spec:
        command += ["--speculative-config", spec]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        import httpx

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        cpu_before = _cpu_seconds(process.pid)
        tokens, wall = asyncio.run(_live(port, streams, max_tokens))
        cpu = _cpu_seconds(process.pid) - cpu_before
    finally:
        process.terminate()
        process.wait(timeout=10)
    label = "eagle3 k=3" if spec else "no spec decode"
    print(f"## Live ({label}): {streams} streams x {max_tokens} tokens, time scale {time_scale}\n")
    print("| streams | tokens | wall s | tokens/s | server CPU s | tokens per server CPU s |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {streams} | {tokens} | {wall:.2f} | {tokens / wall:.0f} | {cpu:.2f} "
        f"| {tokens / max(cpu, 1e-9):.0f} |"
    )
    print()


def main() -> None:
    """Print the tables quoted in engine-image/README.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--live", action="store_true", help="also run the live load table")
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--time-scale", default="1.0")
    args = parser.parse_args()
    step_law_table()
    sweep_table("L40S", "llama-3.1-8b", 1, 0.6)
    sweep_table("H100", "llama-3.3-70b", 4, 0.6)
    if args.live:
        live_table(args.streams, args.max_tokens, args.time_scale, None)
        eagle3 = (
            '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",'
            ' "num_speculative_tokens": 3}'
        )
        live_table(args.streams, args.max_tokens, args.time_scale, eagle3)


if __name__ == "__main__":
    main()
