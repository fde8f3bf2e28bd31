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
among configs whose true P99 tail ratio meets constraints.maxTailRatio (plain decoding
counts, at 1.0), and its own tail ratio is within the tolerance of that maximum; a
repetition is right when every load is. The references pick among configs whose
tail-ratio point estimate meets the maximum. Columns: GPU-
seconds (median over repetitions), the share of repetitions right at every load, and the
share of loads the tuning decided by its bounds ("proven": leader known to within the
tolerance) rather than by the fallback (every unsettled survivor ran trial.maxSeconds,
then the best point estimate, as the exhaustive sweep picks).

    .venv/bin/python benchmarks/tuning.py [--reps N] [--tolerance T ...] [--noise X ...]
        [--truth] [--example N [--svg FILE]]
"""

from __future__ import annotations

import argparse
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
    pick_right,
    point_picks,
)

from specdecode.domain.tuning.cells import CellKey  # noqa: E402
from specdecode.domain.tuning.render import markdown, svg  # noqa: E402
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


def main() -> int:
    """Print the table (and one example report with --example)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--truth", action="store_true", help="print each scenario's truth")
    parser.add_argument(
        "--tolerance", type=float, action="append", help="trial.tolerance (repeatable)"
    )
    parser.add_argument(
        "--noise", type=float, action="append", help="block noise multiplier (repeatable)"
    )
    parser.add_argument("--example", type=int, default=None, help="print scenario N's report")
    parser.add_argument("--svg", type=Path, default=None, help="write the example's SVG here")
    args = parser.parse_args()
    started = time.monotonic()
    print(
        "| scenario | tolerance | noise | configs x loads | tuning GPU-s | exhaustive GPU-s "
        "| saving | tuning right | proven loads | exhaustive right | one-look right |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for index, scenario in enumerate(SCENARIOS):
        for tolerance_override in args.tolerance or [None]:
            for noise in args.noise or [1.0]:
                run_scenario(scenario, tolerance_override, noise, args, index)
    print(f"\n{args.reps} repetitions per scenario, {time.monotonic() - started:.0f} s")
    return 0


def run_scenario(
    scenario: Scenario,
    tolerance_override: float | None,
    noise: float,
    args: argparse.Namespace,
    index: int,
) -> None:
    """One table row: repetitions of the tuning and its references on one scenario."""
    trial = {} if tolerance_override is None else {"tolerance": tolerance_override}
    spec = scenario.tuning_spec(trial=trial)
    tolerance = spec.trial.tolerance
    spent, oks, full_oks, look_oks, proven = [], 0, 0, 0, 0
    for rep in range(args.reps):
        rng = random.Random(args.seed * 100_003 + rep)
        sim = SimulatedTuning(scenario, spec, rng, noise_scale=noise)
        run = sim.finish()
        picks = {v.load: v.leader for v in run.standing().loads}
        spent.append(run.gpu_seconds)
        proven += sum(v.reason.startswith("leader known") for v in run.standing().loads)
        oks += pick_right(sim, picks)
        full_oks += pick_right(sim, point_picks(sim, spec.trial.max_seconds, rng))
        look_oks += pick_right(sim, point_picks(sim, spec.trial.look_seconds, rng))
        if rep == 0 and args.example == index:
            report = build_report(run)
            print(markdown(report))
            if args.svg is not None:
                args.svg.write_text(svg(report))
    if args.truth:
        print_truth(scenario)
    exhaustive = sim.run.exhaustive_gpu_seconds()
    median = statistics.median(spent)
    shape = f"{len(sim.run.configs)} x {len(spec.loads())}"
    print(
        f"| {scenario.name} | {tolerance:.0%} | {noise:g} | {shape} | {median:.0f} "
        f"| {exhaustive:.0f} | {exhaustive / median:.1f}x | {oks / args.reps:.0%} "
        f"| {proven / (args.reps * len(spec.loads())):.0%} "
        f"| {full_oks / args.reps:.0%} | {look_oks / args.reps:.0%} |"
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
