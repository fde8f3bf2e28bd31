"""Gate statistics under repeated looks: error rates and samples to a decision.

Runs the domain's Analyzing step over whole simulated stages (one look every 15 s, warm-up
30 s, 60-600 s, default confidence 0.95) on seeded synthetic observations (see
tests/unit/domain/domain_gatesim.py) and prints, per true effect:
promoted / rolled back / undecided rates and the median samples and seconds to a decision.
At the threshold, "promoted" is the wrong-promotion rate and "rolled back" the
wrong-rollback rate; both must stay at or below 5 %. Acceptance: 0.5 finished requests
per second of 40-120 drafts each (k = 3), per-request acceptance spread sd(r) ~ 0.1, or
~0.2 for the "wide prompt mix" rows. Latency: --itl-rate ITL samples per second and side
(a real stage at concurrency 32 yields ~10x more, so its decisions come ~10x sooner).
ServerStep latency (vLLM's step-ITL histogram, Mirror traffic): lognormal per-step ITL
(log-sd 0.25) whose median is drawn per stage log-uniformly from 15-40 ms, so the P99s
(27-72 ms) land anywhere relative to vLLM's bucket edges; --step-rate independent steps
per second and engine. The "x 8", "x 32" and "x 64" rows record each step once per request of
a batch (dependent observations); the histograms carry the window's step count (as
`vllm:iteration_tokens_total` gives it), so the gate counts each step once, except in the
"no step count" rows (the uncorrected gate, as with an engine that does not export it).
The "at 50 ms" rows put the baseline's and candidate's P99 either side of the 50 ms edge,
the worst case at 1.10.

    .venv/bin/python benchmarks/gates.py [--trials N] [--seed S]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "domain"))

from domain_gatesim import (
    BETA_CONCENTRATION,
    WIDE_CONCENTRATION,
    AcceptanceSource,
    LatencySource,
    Outcome,
    StageRun,
    run_stage,
    single_stage_spec,
)
from domain_stepsim import SERVER_P99, STRADDLING_MEDIAN, StepHistogramSource

from specdecode.api import GateSpec, GateType

ALPHA_GATE = GateSpec(name="alpha", type=GateType.ACCEPTANCE, min_alpha=0.55)
P99_GATE = GateSpec(name="p99-itl", type=GateType.TAIL_LATENCY, quantile=0.99, tolerance=0.10)

# (label, true alpha, request count reported, Beta concentration of per-request r)
ACCEPTANCE_CASES = [
    ("alpha 0.55 (threshold)", 0.55, True, BETA_CONCENTRATION),
    ("alpha 0.55 (threshold), no request count", 0.55, False, BETA_CONCENTRATION),
    ("alpha 0.55 (threshold), wide prompt mix", 0.55, True, WIDE_CONCENTRATION),
    ("alpha 0.75", 0.75, True, BETA_CONCENTRATION),
    ("alpha 0.75, no request count", 0.75, False, BETA_CONCENTRATION),
    ("alpha 0.75, wide prompt mix", 0.75, True, WIDE_CONCENTRATION),
    ("alpha 0.62", 0.62, True, BETA_CONCENTRATION),
    ("alpha 0.45", 0.45, True, BETA_CONCENTRATION),
    ("alpha 0.35", 0.35, True, BETA_CONCENTRATION),
]
# (label, true P99 ratio, baseline median or None for log-uniform 15-40 ms, steps/s, batch,
# step count reported); a steps/s of None means --step-rate.
AT_50_MS = STRADDLING_MEDIAN
STEP_CASES: list[tuple[str, float, float | None, float | None, int, bool]] = [
    ("step P99 1.10 (threshold)", 1.10, None, None, 1, True),
    ("step P99 0.80", 0.80, None, None, 1, True),
    ("step P99 0.90", 0.90, None, None, 1, True),
    ("step P99 1.00", 1.00, None, None, 1, True),
    ("step P99 1.30", 1.30, None, None, 1, True),
    ("step P99 1.10 at 50 ms", 1.10, AT_50_MS, None, 1, True),
    ("step P99 1.10 at 50 ms, 32 steps/s x 8", 1.10, AT_50_MS, 32.0, 8, True),
    ("step P99 1.10 at 50 ms, 32 steps/s x 8, no step count", 1.10, AT_50_MS, 32.0, 8, False),
    ("step P99 0.80, 32 steps/s x 8", 0.80, None, 32.0, 8, True),
    ("step P99 0.80, 32 steps/s x 8, no step count", 0.80, None, 32.0, 8, False),
    ("step P99 1.30, 32 steps/s x 8", 1.30, None, 32.0, 8, True),
    ("step P99 1.10 at 50 ms, 2 steps/s x 32", 1.10, AT_50_MS, 2.0, 32, True),
    ("step P99 1.10 at 50 ms, 2 steps/s x 32, no step count", 1.10, AT_50_MS, 2.0, 32, False),
    ("step P99 1.10 at 50 ms, 1 step/s x 64", 1.10, AT_50_MS, 1.0, 64, True),
    ("step P99 1.10 at 50 ms, 1 step/s x 64, no step count", 1.10, AT_50_MS, 1.0, 64, False),
]
LATENCY_CASES = [
    ("P99 ratio 1.10 (threshold)", 1.10),
    ("P99 ratio 0.90", 0.90),
    ("P99 ratio 1.00", 1.00),
    ("P99 ratio 1.30", 1.30),
]


def _row(label: str, runs: list[StageRun], unit: str, elapsed: float) -> str:
    def share(outcome: Outcome) -> str:
        return f"{100 * sum(r.outcome is outcome for r in runs) / len(runs):5.1f} %"

    decided = [r for r in runs if r.outcome is not Outcome.UNDECIDED]
    samples = f"{statistics.median(r.samples for r in decided):>9.0f}" if decided else "        -"
    seconds = f"{statistics.median(r.seconds for r in decided):>6.0f}" if decided else "     -"
    return (
        f"{label:<64} {len(runs):>6} {share(Outcome.PROMOTED)} {share(Outcome.ROLLED_BACK)} "
        f"{share(Outcome.UNDECIDED)} {samples} {unit:<13} {seconds} s  ({elapsed:.1f}s)"
    )


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400, help="stages per acceptance row")
    parser.add_argument("--latency-trials", type=int, default=200, help="stages per latency row")
    parser.add_argument("--itl-rate", type=float, default=100.0, help="ITL samples/s per side")
    parser.add_argument("--step-trials", type=int, default=200, help="stages per ServerStep row")
    parser.add_argument("--step-rate", type=float, default=64.0, help="engine steps/s per side")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    header = (
        f"{'true effect (gate threshold)':<64} {'trials':>6} {'promoted':>7} {'rolled back':>8} "
        f"{'undecided':>7} {'median samples to decision':>23} {'time':>8}"
    )
    print(header)
    print("-" * len(header))
    spec = single_stage_spec(ALPHA_GATE, concurrency=4)
    for label, alpha, with_requests, concentration in ACCEPTANCE_CASES:
        started = time.perf_counter()
        runs = [
            run_stage(
                spec,
                AcceptanceSource(
                    alpha, rng, report_requests=with_requests, concentration=concentration
                ),
            )
            for _ in range(args.trials)
        ]
        print(_row(f"{label} vs 0.55", runs, "draft tokens", time.perf_counter() - started))
    spec = single_stage_spec(P99_GATE, concurrency=32)
    for label, ratio in LATENCY_CASES:
        started = time.perf_counter()
        runs = [
            run_stage(spec, LatencySource(ratio, rng, samples_per_second=args.itl_rate))
            for _ in range(args.latency_trials)
        ]
        print(_row(f"{label} vs 1.10", runs, "ITL per side", time.perf_counter() - started))
    spec = single_stage_spec(SERVER_P99, concurrency=32)
    for label, ratio, median, steps, batch, report_steps in STEP_CASES:
        started = time.perf_counter()
        runs = [
            run_stage(
                spec,
                StepHistogramSource(
                    ratio,
                    rng,
                    median or math.exp(rng.uniform(math.log(0.015), math.log(0.040))),
                    steps or args.step_rate,
                    batch,
                    report_steps,
                ),
            )
            for _ in range(args.step_trials)
        ]
        # Samples are what the gate counted: steps with the step count, else observations.
        unit = "steps / side" if report_steps else "obs. / side"
        print(_row(f"{label} vs 1.10", runs, unit, time.perf_counter() - started))


if __name__ == "__main__":
    main()
