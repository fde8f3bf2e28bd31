"""The simulator's own step trace: how dependent are consecutive engine steps?

Why: the gate simulations (tests/unit/domain/domain_gatesim.py, `benchmarks/gates.py`) draw
step times from an AR(1) series whose coefficient must come from a measurement, not a guess.
This runs the simulator's engine core in-process, in simulated time (the same closed loop as
`calibration.py --in-process`: no HTTP, no wall clock, deterministic), at the default
production stage's load: 32 streams, chat prompts, max_tokens 256 (the traffic default),
and records every step. Printed per configuration:
- the lag-1, lag-5, 1-s and 2-s autocorrelation of log step time (the AR(1) coefficient is
  the lag-1 figure; an AR(1) series predicts lag-L = lag-1 ** L, printed beside it);
- prefill steps: their share, how many sequences each admits (a "wave" is a step that
  starts several requests at once: closed-loop requests that finish together restart
  together) and their median duration against the decode steps'.
Steps are counted from the first 10 s of simulated time on, until the last request is sent
(no draining tail).

    .venv/bin/python benchmarks/step_trace.py [--requests 1200] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine-image"))

from calibration import run_in_process
from calibration_workloads import BLOCKS, request_bodies

from specdecode_sim.request import StepReport

WARMUP_SECONDS = 10.0
MAX_TOKENS = 256


def autocorrelation(series: list[float], lag: int) -> float:
    """Sample autocorrelation at `lag` (the standard biased estimator)."""
    mean = statistics.fmean(series)
    centred = [x - mean for x in series]
    variance = sum(x * x for x in centred)
    return sum(a * b for a, b in zip(centred, centred[lag:], strict=False)) / variance


def trace(block: str, method: str, workload: str, requests: int, concurrency: int) -> None:
    """Run one configuration and print its step statistics."""
    bodies = [{**b, "max_tokens": MAX_TOKENS} for b in request_bodies(workload, requests)]
    steps: list[StepReport] = []
    run_in_process(BLOCKS[block][method], bodies, concurrency, steps.append)
    last_admitted = max(i for i, s in enumerate(steps) if s.prompt_tokens > 0)
    kept = [s for s in steps[:last_admitted] if s.started >= WARMUP_SECONDS]
    logs = [math.log(s.duration) for s in kept]
    per_second = len(kept) / (kept[-1].ended - kept[0].started)
    lags = {"1": 1, "5": 5, "1 s": round(per_second), "2 s": round(2 * per_second)}
    rho = {name: autocorrelation(logs, lag) for name, lag in lags.items()}
    prefill = [s for s in kept if s.prompt_tokens > 0]
    decode = [s for s in kept if s.prompt_tokens == 0]
    admitted = [sum(1 for e in s.emissions if e.inter_token_latency is None) for s in prefill]
    print(
        f"| {block} | {workload} | {method} | {len(kept)} | {per_second:.1f} | "
        + " | ".join(f"{rho[n]:.3f} ({rho['1'] ** lags[n]:.3f})" for n in lags)
        + f" | {len(prefill) / len(kept):.3f} | {statistics.fmean(admitted):.1f} "
        f"| {statistics.median(s.duration for s in prefill) * 1e3:.1f} "
        f"| {statistics.median(s.duration for s in decode) * 1e3:.1f} |"
    )


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1200)
    parser.add_argument("--concurrency", type=int, default=32)
    options = parser.parse_args()
    print(f"step trace: {options.requests} requests, {options.concurrency} streams, in-process")
    print(
        "| model / GPU | workload | method | steps | steps/s | lag 1 | lag 5 (AR) | 1 s (AR) "
        "| 2 s (AR) | prefill share | first tokens per prefill step | prefill ms | decode ms |"
    )
    print("|---" * 13 + "|")
    for block, workload, method in (
        ("8B / L40S", "chat", "none"),
        ("8B / L40S", "chat", "EAGLE-3"),
        ("8B / L40S", "code", "suffix"),
        ("70B / 2x H200", "chat", "EAGLE-3"),
    ):
        trace(block, method, workload, options.requests, options.concurrency)


if __name__ == "__main__":
    main()
