"""Tail-gate defaults: candidate / baseline P99 inter-token latency, in simulated time.

Why: TailLatency's default definition and tolerance must roll back a candidate whose P99
stall grew 1.5x at production concurrency and still promote the study's wins where they
were published (concurrency 10). This drives the engine core in process (closed loop, no
HTTP, no wall clock; `calibration.run_in_process` with a concurrency and fault knobs) and
prints the P99 ratio per definition: PerChunk (the gap between streamed chunks: the stall
a reader sees), PerToken (each gap spread over its chunk's tokens, weighted by tokens).

    .venv/bin/python benchmarks/tail_ratios.py [--requests 200] [--gpu L40S GB10]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine-image"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))

from calibration import _FakeClock
from calibration_client import ClientRecord
from calibration_workloads import E8, M8, Engine, request_bodies

from specdecode.api import TrafficSpec
from specdecode.domain.prompts import SamplingDefaults, builtin_prompts
from specdecode_sim.cliargs import parse_cli
from specdecode_sim.engine import EngineCore
from specdecode_sim.loop import EngineLoop
from specdecode_sim.protocol import parse_request
from specdecode_sim.settings import load_settings
from specdecode_sim.startup import build_plan

EAGLE3 = {"method": "eagle3", "model": E8, "num_speculative_tokens": 3}
STUDY_EAGLE3 = {"method": "eagle3", "model": E8, "num_speculative_tokens": 2}
CONFIGS: dict[str, tuple[str, dict[str, Any] | None]] = {
    "n-gram chat": (
        "chat",
        {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4},
    ),
    "suffix code (k 8)": ("code", {"method": "suffix", "num_speculative_tokens": 8}),
    "EAGLE-3 chat (k 2)": ("chat", STUDY_EAGLE3),
    "EAGLE-3 chat (k 3)": ("chat", EAGLE3),
    "EAGLE-3 translation (k 3)": ("translation", EAGLE3),
    "none + 0.1 s (mean) on 2 % of steps": ("chat", None),
}
SPIKE = {
    "SPECDECODE_SIM_LATENCY_SPIKE_PROBABILITY": "0.02",
    "SPECDECODE_SIM_LATENCY_SPIKE_SECONDS": "0.1",
}


def shadow_bodies(workload: str, count: int, study: bool) -> list[dict[str, Any]]:
    """The operator's built-in prompt set of the class (what its load pods replay, at a
    rollout's default maxTokens and sampling), or with `study` the calibration study's chat /
    code bodies."""
    if study:
        return request_bodies("chat" if workload == "translation" else workload, count)
    traffic = TrafficSpec()
    sampling = SamplingDefaults(temperature=traffic.temperature, top_p=traffic.top_p)
    prompts = builtin_prompts(workload, count, traffic.seed, traffic.max_tokens, sampling)
    return [r.chat_body("m", i) for i, r in enumerate(prompts)]


def run(
    gpu: str,
    config: dict[str, Any] | None,
    workload: str,
    bodies: list[dict[str, Any]],
    concurrency: int,
    extra_env: dict[str, str],
) -> list[ClientRecord]:
    engine = Engine("x", M8, gpu, 1, config)
    plan = build_plan(
        parse_cli(engine.argv(8000)), load_settings({"SPECDECODE_SIM_GPU": gpu, **extra_env})
    )
    core = EngineCore(plan.engine)
    clock = _FakeClock()
    loop = EngineLoop(core, clock, None, plan.engine.seed, workload, plan.repetition)  # type: ignore[arg-type]
    pending = list(reversed(bodies))
    records: dict[str, ClientRecord] = {}
    outstanding = 0
    while pending or core.has_work():
        while outstanding < concurrency and pending:
            parsed = parse_request(pending.pop(), True, None)
            request_id = f"r{len(records)}"
            request = loop.build_request(request_id, parsed, workload, 256)
            request.arrival_ts = clock.t
            records[request_id] = ClientRecord(clock.t)
            core.add(request)
            outstanding += 1
        report = core.step(clock.t)
        if report is None:
            break
        clock.t = report.ended
        for emission in report.emissions:
            record = records[emission.request.request_id]
            if emission.tokens:
                record.chunk_times.append(report.ended)
                record.chunk_tokens.append(len(emission.tokens))
                record.tokens += len(emission.tokens)
            if emission.finish_reason is not None:
                outstanding -= 1
    return list(records.values())


def p99(records: list[ClientRecord], per_token: bool, q: float = 0.99) -> float:
    weighted = []
    for record in records:
        gaps = itertools.pairwise(record.chunk_times)
        for (a, b), tokens in zip(gaps, record.chunk_tokens[1:], strict=True):
            weighted.append(((b - a) / tokens, tokens) if per_token else (b - a, 1))
    weighted.sort()
    total, seen = sum(w for _, w in weighted), 0.0
    for value, weight in weighted:
        seen += weight
        if seen >= q * total:
            return value
    return weighted[-1][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--gpu", nargs="+", default=["L40S", "GB10"])
    parser.add_argument("--concurrency", nargs="+", type=int, default=[10, 32])
    parser.add_argument("--study", action="store_true", help="the study's prompts, not built-in")
    options = parser.parse_args()
    print("| GPU | c | config | P99 chunk gap ms base / cand | PerChunk ratio | PerToken ratio |")
    print("|---|---|---|---|---|---|")
    for gpu, concurrency in itertools.product(options.gpu, options.concurrency):
        bases: dict[str, list[ClientRecord]] = {}
        for label, (workload, config) in CONFIGS.items():
            bodies = shadow_bodies(workload, options.requests, options.study)
            if workload not in bases:
                bases[workload] = run(gpu, None, workload, bodies, concurrency, {})
            base = bases[workload]
            cand = run(gpu, config, workload, bodies, concurrency, SPIKE if config is None else {})
            chunk = p99(cand, False) / p99(base, False)
            token = p99(cand, True) / p99(base, True)
            print(
                f"| {gpu} | {concurrency} | {label} | {p99(base, False) * 1e3:.1f} / "
                f"{p99(cand, False) * 1e3:.1f} | {chunk:.2f} | {token:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
