"""Tuning against an exhaustive sweep, on seeded simulations with the simulator's physics.

Each scenario is a model on a device, a workload class and a search space; the truth
(TPOT speedup per config and concurrency) comes from the simulator's step-time, draft-cost
and acceptance modules (tests/unit/domain/tuning_sim.py says how, and what is assumed).
Every repetition runs the domain's tuning (successive elimination, sequential bounds,
maxParallelTrials and the GPU budget of the spec) on fresh seeded noise, and two
references on the same truth:
- exhaustive: every cell for trial.maxSeconds, the best point estimate per load;
- one look: every cell for one look (trial.lookSeconds), the best point estimate per load
  (the control: picking on point estimates, no bounds).
A pick is right at a load when its true ratio is within trial.tolerance of the true best
(plain decoding counts, at 1.0); a repetition is right when every load is. Columns: GPU-
seconds (median over repetitions) and the share of repetitions right at every load.

    PYTHONPATH=engine-image:tests/unit/domain .venv/bin/python benchmarks/tuning.py [--reps N]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "engine-image"), str(ROOT / "tests" / "unit" / "domain")]

from tuning_sim import (  # noqa: E402
    Scenario,
    SimulatedTuning,
    best_at,
    block_sd,
    picked_ratio,
)

from specdecode.domain.tuning.cells import NONE, CellKey  # noqa: E402
from specdecode.domain.tuning.render import markdown  # noqa: E402
from specdecode.domain.tuning.report import build_report  # noqa: E402

EAGLE3_8B = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
EAGLE_8B = "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"
ENGINE = {"image": "vllm/vllm-openai:v0.24.0"}
MODEL_8B = {"name": "meta-llama/Llama-3.1-8B-Instruct"}
BROAD_SPACE = {
    "candidates": [{"method": "suffix", "num_speculative_tokens": 8}],
    "grids": [
        {"method": "ngram", "numSpeculativeTokens": [3, 5], "promptLookupMax": [2, 4]},
        {"method": "eagle", "model": EAGLE_8B, "numSpeculativeTokens": [2, 3]},
        {"method": "eagle3", "model": EAGLE3_8B, "numSpeculativeTokens": [2, 3, 5]},
    ],
}
SCENARIOS = (
    Scenario(
        "8B code, L40S",
        "L40S",
        "llama-3.1-8b",
        "code",
        {"model": MODEL_8B, "engine": ENGINE, "searchSpace": BROAD_SPACE},
    ),
    Scenario(
        "8B chat, L40S",
        "L40S",
        "llama-3.1-8b",
        "chat",
        {"model": MODEL_8B, "engine": ENGINE, "searchSpace": BROAD_SPACE},
    ),
    Scenario(
        "8B chat, A100, c<=128",
        "A100",
        "llama-3.1-8b",
        "chat",
        {
            "model": MODEL_8B,
            "engine": ENGINE,
            "productionConcurrency": 128,
            "searchSpace": {
                "grids": [
                    {"method": "eagle3", "model": EAGLE3_8B, "numSpeculativeTokens": [2, 3, 5]}
                ]
            },
        },
    ),
)


def right(truth: dict[CellKey, float], picks: dict[int, str], tolerance: float) -> bool:
    """Every load's pick within the tolerance of the true best there."""
    return all(
        picked_ratio(truth, config, load) >= best_at(truth, load) * (1 - tolerance)
        for load, config in picks.items()
    )


def point_picks(sim: SimulatedTuning, seconds: int, rng: random.Random) -> dict[int, str]:
    """Best point estimate per load after `seconds` of every cell (no bounds)."""
    picks = {}
    for load in sim.spec.loads():
        best, best_value = NONE, 1.0
        for config in sim.run.configs:
            key = CellKey(config, load)
            blocks = seconds // 2
            mean = sum(rng.gauss(0.0, 1.0) for _ in range(blocks)) / blocks
            value = sim.truth[key] * math.exp(mean * block_sd(load))
            if value > best_value:
                best, best_value = config, value
        picks[load] = best
    return picks


def main() -> int:
    """Print the table (and one example report with --example)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--truth", action="store_true", help="print each scenario's truth")
    parser.add_argument(
        "--tolerance", type=float, action="append", help="trial.tolerance (repeatable)"
    )
    parser.add_argument("--example", type=int, default=None, help="print scenario N's report")
    args = parser.parse_args()
    started = time.monotonic()
    print(
        "| scenario | tolerance | configs x loads | tuning GPU-s | exhaustive GPU-s | saving "
        "| tuning right | exhaustive right | one-look right |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    tolerances = args.tolerance or [None]
    for index, scenario in enumerate(SCENARIOS):
        for tolerance_override in tolerances:
            run_scenario(scenario, tolerance_override, args, index)
    print(f"\n{args.reps} repetitions per scenario, {time.monotonic() - started:.0f} s")
    return 0


def run_scenario(
    scenario: Scenario, tolerance_override: float | None, args: argparse.Namespace, index: int
) -> None:
    """One table row: repetitions of the tuning and its references on one scenario."""
    trial = {} if tolerance_override is None else {"tolerance": tolerance_override}
    spec = scenario.tuning_spec(trial=trial)
    tolerance = spec.trial.tolerance
    spent, oks, full_oks, look_oks = [], 0, 0, 0
    for rep in range(args.reps):
        rng = random.Random(args.seed * 100_003 + rep)
        sim = SimulatedTuning(scenario, spec, rng)
        run = sim.finish()
        picks = {v.load: v.leader for v in run.standing().loads}
        spent.append(run.gpu_seconds)
        oks += right(sim.truth, picks, tolerance)
        full_oks += right(sim.truth, point_picks(sim, spec.trial.max_seconds, rng), tolerance)
        look_oks += right(sim.truth, point_picks(sim, spec.trial.look_seconds, rng), tolerance)
        if rep == 0 and args.example == index:
            print(markdown(build_report(run)))
    if args.truth:
        print_truth(scenario)
    exhaustive = sim.run.exhaustive_gpu_seconds()
    median = statistics.median(spent)
    shape = f"{len(sim.run.configs)} x {len(spec.loads())}"
    print(
        f"| {scenario.name} | {tolerance:.0%} | {shape} | {median:.0f} | {exhaustive:.0f} "
        f"| {exhaustive / median:.1f}x | {oks / args.reps:.0%} | {full_oks / args.reps:.0%} "
        f"| {look_oks / args.reps:.0%} |"
    )


def print_truth(scenario: Scenario) -> None:
    """The physics' ratios per config and load, and each config's true break-even."""
    spec = scenario.tuning_spec()
    sim = SimulatedTuning(scenario, spec, random.Random(0))
    for config in spec.configs():
        ratios = [sim.truth[CellKey(config.fingerprint(), load)] for load in spec.loads()]
        lookup = config.prompt_lookup_max or ""
        label = f"{config.method.value} k={config.num_speculative_tokens} {lookup}"
        print(f"  {label:<20} " + " ".join(f"{r:.3f}" for r in ratios))


if __name__ == "__main__":
    sys.exit(main())
