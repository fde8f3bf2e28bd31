"""Calibration suite: the published side-by-side study, re-run through the simulator.

Starts one simulator per configuration (`specdecode-sim serve ...`, configured only by
the vLLM flags and SPECDECODE_SIM_GPU / SPECDECODE_SIM_TIME_SCALE), drives it like
`vllm bench serve` (closed loop, concurrency 10, streamed chat completions, max 1,024
output tokens, greedy, identical requests for every method) and prints measured vs
published output tok/s, mean TPOT, mean per-chunk ITL and speedup, with ratios, per row
of calibration.md. Latencies are client-side wall times divided by the time scale;
`overruns` is the simulator's own clock-overrun counter (0 = the clock did not slip).

    .venv/bin/python benchmarks/calibration.py [--time-scale 0.1] [--requests 120]
    .venv/bin/python benchmarks/calibration.py --in-process   # engine core, no HTTP (fast)
    .venv/bin/python benchmarks/calibration.py --moe-only     # the MoE rows (in-process)

Then the MoE rows (calibration_moe.py): the published MoE measurements, predicted by the
step model at their batch size, k and acceptance length; then an MoE model's speculative
speedup at 1, 8 and 32 streams, in-process (no published figures to compare).

Workloads and published figures: benchmarks/calibration_workloads.py.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine-image"))

from calibration_client import ClientRecord, run_http
from calibration_moe import (
    DENSE_CONTROL,
    MOE_GPU,
    MOE_METHODS,
    MOE_MODEL,
    MOE_STREAMS,
    PUBLISHED_MOE,
    PublishedMoeRow,
    admissible_reuse,
    excluded_rows,
    fit_expert_reuse,
    fitted_rows,
    predicted_speedup,
    reuse_giving_gain_at_one_and_loss_at_eight,
    sglang_overhead_check,
    stack_bias,
    stream_trend,
)
from calibration_workloads import BLOCKS, PUBLISHED, Engine, request_bodies

from specdecode.domain.latency_block import time_per_output_token
from specdecode_sim.cliargs import parse_cli
from specdecode_sim.engine import EngineCore
from specdecode_sim.loop import EngineLoop
from specdecode_sim.profiles import MODELS
from specdecode_sim.protocol import parse_request
from specdecode_sim.request import StepReport
from specdecode_sim.settings import load_settings
from specdecode_sim.startup import build_plan

CONCURRENCY = 10


@dataclass
class Measured:
    """One configuration's client-side figures, in simulated seconds."""

    tokens: int
    duration: float
    tpot: list[float] = field(default_factory=list)
    itl: list[float] = field(default_factory=list)
    chunks: int = 0
    chunk_tokens: int = 0
    overruns: float = 0.0

    @property
    def chunk_mean(self) -> float:
        """Mean tokens per streamed chunk after the first (tokens per engine step)."""
        return self.chunk_tokens / max(self.chunks, 1)

    @property
    def throughput(self) -> float:
        """Output tokens per simulated second."""
        return self.tokens / self.duration


def _summarise(records: list[ClientRecord], duration: float, overruns: float) -> Measured:
    """Throughput over the full closed loop (until the last request is sent, so the
    study's 1,000-request runs, nearly free of a draining tail, are what it compares to);
    TPOT per request; ITL per chunk."""
    window = max(record.sent for record in records)
    emitted = sum(
        tokens
        for record in records
        for stamp, tokens in zip(record.chunk_times, record.chunk_tokens, strict=False)
        if stamp <= window
    )
    measured = Measured(emitted, window, overruns=overruns)
    for record in records:
        times = record.chunk_times
        if len(times) > 1:
            tpot = time_per_output_token(
                times[-1] - times[0], record.tokens - record.chunk_tokens[0]
            )
            if tpot is not None:
                measured.tpot.append(tpot)
        measured.itl.extend(b - a for a, b in itertools.pairwise(times))
        measured.chunks += max(len(times) - 1, 0)
        measured.chunk_tokens += sum(record.chunk_tokens[1:])
    return measured


class _FakeClock:
    time_scale = 1.0

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


def run_in_process(
    engine: Engine,
    bodies: list[dict[str, Any]],
    concurrency: int = CONCURRENCY,
    on_step: Callable[[StepReport], None] | None = None,
) -> Measured:
    """Closed loop through the engine core in simulated time (no HTTP, no wall clock).

    `on_step` sees every step's report (`benchmarks/step_trace.py` records durations)."""
    args = parse_cli(engine.argv(8000))
    plan = build_plan(args, load_settings({"SPECDECODE_SIM_GPU": engine.gpu}))
    core = EngineCore(plan.engine)
    clock = _FakeClock()
    loop = EngineLoop(core, clock, None, plan.engine.seed, "chat", plan.repetition)  # type: ignore[arg-type]
    pending = list(reversed(bodies))
    records: dict[str, ClientRecord] = {}
    outstanding = 0
    while pending or core.has_work():
        while outstanding < concurrency and pending:
            body = pending.pop()
            parsed = parse_request(body, True, None)
            request_id = f"r{len(records)}"
            request = loop.build_request(request_id, parsed, str(parsed.workload), 1024)
            request.arrival_ts = clock.t
            records[request_id] = ClientRecord(clock.t)
            core.add(request)
            outstanding += 1
        report = core.step(clock.t)
        if report is None:
            break
        clock.t = report.ended
        if on_step is not None:
            on_step(report)
        for emission in report.emissions:
            record = records[emission.request.request_id]
            if emission.tokens:
                record.chunk_times.append(report.ended)
                record.chunk_tokens.append(len(emission.tokens))
                record.tokens += len(emission.tokens)
            if emission.finish_reason is not None:
                outstanding -= 1
    return _summarise(list(records.values()), clock.t, 0.0)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(measured: float, published: float | None) -> str:
    return "-" if not published else f"{measured / published:.2f}"


def _moe_row_line(row: PublishedMoeRow, status: str) -> str:
    simulated = predicted_speedup(row)
    same_sign = (simulated > 1.0) == (row.speedup > 1.0)
    return (
        f"| {row.label} | {row.engine} | {row.k} | {row.acceptance_length:.2f} "
        f"| {simulated:.2f} | {row.speedup:.2f} | {simulated / row.speedup:.2f} "
        f"| {predicted_speedup(row, 0.0):.2f} | {'kept' if same_sign else 'WRONG'} | {status} |"
    )


def published_moe_table() -> None:
    """Published MoE rows beside the prediction, with the uniform union (reuse 0) for
    contrast, the reuse fit, and the dense control rows of the fitted rows' stack."""
    fitted = fitted_rows()
    print("\nMoE, published: steady-state step model at the row's batch size, TP, k, acceptance")
    print(
        "| row | engine | k | acc len | speedup sim | speedup pub | ratio | uniform union sim "
        "| sign | use |"
    )
    print("|---" * 10 + "|")
    for row in PUBLISHED_MOE:
        status = "fitted" if row in fitted else f"excluded ({row.engine})"
        print(_moe_row_line(row, status))
    for row in DENSE_CONTROL:
        print(_moe_row_line(row, "dense control"))
    worst = max(abs(predicted_speedup(row) / row.speedup - 1.0) for row in fitted)
    low, high = admissible_reuse()
    print(
        f"Qwen3-30B-A3B expert_reuse: profile {MODELS['qwen3-30b-a3b'].expert_reuse:.2f}, "
        f"fit {fit_expert_reuse():.2f} (stack bias {stack_bias():+.3f}; raw fit "
        f"{fit_expert_reuse(bias=0.0):.2f}); all fitted rows within 20 % for {low:.2f}-{high:.2f}"
    )
    print(f"worst fitted MoE speedup deviation: {worst * 100:.1f} %")
    for reason in dict.fromkeys(row.excluded for row in excluded_rows()):
        print(f"excluded: {reason}")
    for label, reuse in (("fitted reuse", None), ("reuse 0", 0.0)):
        extra, held_out, published = sglang_overhead_check(reuse)
        print(
            f"SGLang spec-step cost fitted to bs 1 at {label}: +{extra * 1000:.1f} ms; "
            f"bs 4 held out: sim {held_out:.2f}, pub {published:.2f}"
        )
    trend = {reuse: stream_trend(reuse) for reuse in (0.0, MODELS["qwen3-30b-a3b"].expert_reuse)}
    print(
        "GB10 EAGLE-3 k=3, acc len 1.86, speedup at 1 / 8 streams: "
        + "; ".join(f"reuse {r:.2f}: {a:.2f} / {b:.2f}" for r, (a, b) in trend.items())
        + f"; reuses on the grid giving a gain at 1 and a loss at 8: "
        f"{reuse_giving_gain_at_one_and_loss_at_eight() or 'none'}"
    )


def moe_table(requests: int) -> None:
    """Speedup of an MoE model by streams (in-process; no published figures to compare)."""
    published_moe_table()
    print(f"\nMoE: {MOE_MODEL} on {MOE_GPU}, chat, in-process, {requests} requests per row")
    print("| streams | method | tok/s sim | TPOT ms sim | ITL ms sim | tokens/chunk | speedup |")
    print("|---" * 7 + "|")
    bodies = request_bodies("chat", requests)
    for streams in MOE_STREAMS:
        base = 0.0
        for method, engine in MOE_METHODS.items():
            m = run_in_process(engine, bodies, streams)
            base = base or m.throughput
            print(
                f"| {streams} | {method} | {m.throughput:.0f} "
                f"| {statistics.fmean(m.tpot) * 1000:.2f} | {statistics.fmean(m.itl) * 1000:.1f} "
                f"| {m.chunk_mean:.2f} | {m.throughput / base:.2f} |"
            )


def main() -> int:
    """Run every block and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=0.1)
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--only", default="", help="substring of 'block/workload' to run")
    parser.add_argument("--moe-only", action="store_true", help="only the MoE rows")
    options = parser.parse_args()
    if options.moe_only:
        moe_table(options.requests)
        return 0
    mode = "in-process" if options.in_process else f"HTTP, time scale {options.time_scale}"
    print(f"calibration: {options.requests} requests per row, concurrency {CONCURRENCY}, {mode}")
    print(
        "| model / GPU | workload | method | tok/s sim | tok/s pub | TPOT ms sim | TPOT ms pub "
        "| ITL ms sim | ITL ms pub | tokens/chunk | speedup sim | speedup pub | ratio | overruns |"
    )
    print("|---" * 14 + "|")
    worst = 0.0
    order_ok = True
    for (block, workload), published in PUBLISHED.items():
        if options.only and options.only not in f"{block}/{workload}":
            continue
        bodies = request_bodies(workload, options.requests)
        results: dict[str, Measured] = {}
        for method in published:
            engine = BLOCKS[block][method]
            started = time.monotonic()
            if options.in_process:
                results[method] = run_in_process(engine, bodies)
            else:
                env = {**os.environ, "SPECDECODE_SIM_GPU": engine.gpu}
                env["SPECDECODE_SIM_TIME_SCALE"] = str(options.time_scale)
                records, duration, overruns = asyncio.run(
                    run_http(engine.argv, env, bodies, CONCURRENCY, options.time_scale)
                )
                results[method] = _summarise(records, duration, overruns)
            print(
                f"  ({block} {workload} {method}: {time.monotonic() - started:.1f} s wall)",
                file=sys.stderr,
            )
        base = results["none"].throughput
        for method, (tps, tpot, itl, speedup) in published.items():
            m = results[method]
            sim_speedup = m.throughput / base
            ratio = sim_speedup / speedup
            worst = max(worst, abs(ratio - 1.0))
            print(
                f"| {block} | {workload} | {method} | {m.throughput:.0f} | {tps:.0f} "
                f"| {statistics.fmean(m.tpot) * 1000:.2f} | {_fmt(tpot, 2)} "
                f"| {statistics.fmean(m.itl) * 1000:.1f} | {_fmt(itl)} "
                f"| {m.chunk_mean:.2f} "
                f"| {sim_speedup:.2f} | {speedup:.2f} | {ratio:.2f} | {m.overruns:.0f} |"
            )
        published_order = sorted(published, key=lambda name: published[name][3])
        simulated_order = sorted(published, key=lambda name: results[name].throughput)
        if published_order != simulated_order:
            order_ok = False
            print(f"  ordering differs in {block} {workload}: simulated {simulated_order}")
    print(f"worst speedup deviation: {worst * 100:.1f} %; published ordering kept: {order_ok}")
    moe_table(options.requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
