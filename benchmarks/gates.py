"""Gate rules side by side at equal error: today's, the new one, and a fixed window.

Each row simulates whole stages (seeded, see tests/unit/domain/domain_gatesim.py): one look
at 1 s of measuring and every 15 s after, a pass counts from 60 s (minDurationSeconds), a
failure at any look, undecided at 600 s (maxDurationSeconds); confidence 0.95, so each
rule may make at most 5 % wrong promotions and 5 % wrong rollbacks at the threshold.
The three rules see the very same data, look by look:
- today: the rule this replaced. Latency: order-statistic bounds that treat every sample
  (chunk gap, or token) as independent; acceptance: a design effect with an assumed
  intra-request correlation (RHO = 0.25). Both at a Bonferroni share, 0.05 / 42, per look.
- new: the domain's gates (`specdecode.domain.gate_boundary.evaluate_gate`): block- or
  request-clustered bounds at the group-sequential boundary's error (domain.sequential).
- fixed: the new statistic looked at once, at 600 s, at the full 0.05 (no early stop).
- no-HAC: the new rule without the Newey-West term of the block variance (blocks taken as
  independent; `clustered.serial_sum_of_squares`), the control for dependent steps.
The last column gives the new rule's promoted / rolled-back shares with two-sided 95 %
Wilson intervals (at the threshold both are wrong verdicts, each allowed 5 %).
Columns: promoted / rolled back / undecided shares (at the threshold, promoted and rolled
back are the wrong-verdict rates), then the median samples and seconds to a decision.
Latency rows: P99 per-token ITL ratio against 1.10. "batch b" means every one of b
requests records each engine step (10 % per-request jitter, 1-3 tokens per chunk), at the
step rate of a busy engine: 1 / mean step time of the simulated steps (30 ms median, 32 ms
mean: 31 steps/s). Why that rate: a closed-loop load at concurrency b keeps all b requests
in every decode step, and the simulator's roofline (engine-image/specdecode_sim/steptime.py,
Llama-3.1-8B, k = 3, 1-2k context) gives 27-29 ms steps at batch 8 on an L40S, 41-47 ms at
batch 32 on an L40S (12-13 ms on an H100) and 26-28 ms at batch 128 on an H100 (94-117 ms on
an L40S): 21-85 steps/s at batch 32. Only the number of steps matters to the ratio (it is
scale-free), so the rows "N steps/s" show slower engines: 10 steps/s is an L40S at batch
128. "independent": 100 unshared samples/s, the reference without dependence. Acceptance
rows: alpha against 0.55, k = 3, 0.5 requests/s of 40-120 drafts; "sd" is the spread of
per-request alpha.
Dependent steps ("AR ..., waves" rows; domain_gatesim.DependentSteps): each engine's step
times are an AR(1) series (a Gaussian copula on the same pool, so the true ratio stays
exact) with the coefficient measured on the simulator's own step trace ("AR measured":
STEP_AR1 = 0.05, `benchmarks/step_trace.py`; the rows in docs/gates.md ran at 0.036, from a
shorter first trace) or a stress value (0.9 per step: a ~10-step correlation
time; 0.99: ~100 steps, 3 s, longer than a block), plus four closed-loop prefill waves:
cohorts of requests that restart together every ~256 steps, their prefill step drawn from
the pool's slowest 5 %.

    .venv/bin/python benchmarks/gates.py [--trials N] [--latency-trials N] [--seed S]
        [--only acceptance|latency] [--rows REGEX ...]  (rows whose label matches)
    .venv/bin/python benchmarks/gates.py --only latency --rows "AR "  # the dependent rows
Dependent rows run at least DEPENDENT_TRIALS stages (300: 13-19 min a row at batch 8 on a
shared 2-core machine), whatever --latency-trials says.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "domain"))

from domain_gatesim import (
    BETA_CONCENTRATION,
    STEP_AR1,
    T0,
    AcceptanceSource,
    LatencySource,
    beta_mean_for_alpha,
    busy_steps_per_second,
)
from domain_replaced_rules import assumed_correlation_interval

from specdecode.adapters.gate_boundary import gate_params
from specdecode.api import GateSpec, GateType, GateVerdict, ItlDefinition
from specdecode.api.status import GateResult
from specdecode.domain import clustered
from specdecode.domain.gate_boundary import evaluate_gate, pending_result
from specdecode.domain.gate_measures import judge_at_least, judge_at_most
from specdecode.domain.gates import LookPlan
from specdecode.domain.gates.registry import Look, measure_for
from specdecode.domain.observations import AcceptanceCounts, LatencySamples, StageObservations
from specdecode.domain.stats import ratio_interval, sketch_quantile_interval, wilson_bounds

ALPHA_GATE = GateSpec(name="alpha", type=GateType.ACCEPTANCE, min_alpha=0.55)
P99_GATE = GateSpec(
    name="p99-itl",
    type=GateType.TAIL_LATENCY,
    quantile=0.99,
    tolerance=0.10,
    itl_definition=ItlDefinition.PER_TOKEN,
)
LOOKS = (1.0, *(1.0 + 15.0 * i for i in range(1, 41)))  # seconds measured at each look
MIN_SECONDS, MAX_SECONDS, ERROR = 60.0, 600.0, 0.05
TODAY_ERROR = ERROR / 42  # the Bonferroni share of a default stage
RULES = ("today", "new", "fixed", "no-HAC")
DEPENDENT_TRIALS = 300  # enough that a 5 % error shows its Wilson interval within ~2.5 pts
Judge = Callable[[StageObservations], tuple[GateVerdict, int]]


@dataclass
class Outcome:
    verdict: GateVerdict | None = None  # SUCCESSFUL promoted, FAILED rolled back
    samples: int = 0
    seconds: float = 0.0


def today_latency(seen: StageObservations) -> tuple[GateVerdict, int]:
    """The replaced rule: i.i.d. order statistics, Bonferroni over the two sides and looks."""
    base, cand = seen.baseline_latency, seen.candidate_latency
    assert isinstance(base, LatencySamples) and isinstance(cand, LatencySamples)
    b = sketch_quantile_interval(base.per_token_itl, 0.99, TODAY_ERROR / 2)
    c = sketch_quantile_interval(cand.per_token_itl, 0.99, TODAY_ERROR / 2)
    n = min(base.per_token_itl.total, cand.per_token_itl.total)
    if b is None or c is None or b.lower <= 0:
        return GateVerdict.INCONCLUSIVE, n
    return judge_at_most(ratio_interval(c, b), 1.10), n


def today_acceptance(seen: StageObservations) -> tuple[GateVerdict, int]:
    """The replaced rule: assumed correlation RHO = 0.25, Bonferroni over looks."""
    counts = seen.candidate_acceptance
    assert isinstance(counts, AcceptanceCounts)
    interval = assumed_correlation_interval(
        counts.drafts,
        counts.draft_tokens,
        counts.accepted_tokens,
        counts.per_position_accepted,
        TODAY_ERROR,
        counts.requests,
    )
    tokens = int(counts.draft_tokens)
    if interval is None or tokens < 1000:
        return GateVerdict.INCONCLUSIVE, tokens
    return judge_at_least(interval, 0.55), tokens


def samples_of(seen: StageObservations, gate: GateSpec) -> int:
    """Draft tokens (acceptance) or per-token ITL weight per side (latency)."""
    if gate.type is GateType.ACCEPTANCE:
        counts = seen.candidate_acceptance
        return int(counts.draft_tokens) if isinstance(counts, AcceptanceCounts) else 0
    base, cand = seen.baseline_latency, seen.candidate_latency
    assert isinstance(base, LatencySamples) and isinstance(cand, LatencySamples)
    return min(base.per_token_itl.total, cand.per_token_itl.total)


@contextmanager
def independent_blocks() -> Iterator[None]:
    """The control: the block variance without the Newey-West term (blocks independent)."""
    corrected = clustered.serial_sum_of_squares
    clustered.serial_sum_of_squares = lambda residuals: sum(r * r for r in residuals)
    try:
        yield
    finally:
        clustered.serial_sum_of_squares = corrected


def run(
    gate: GateSpec, source: AcceptanceSource | LatencySource, today: Judge
) -> dict[str, Outcome]:
    """One stage, all three rules on the same looks; stops when every rule has decided."""
    outcomes = {rule: Outcome() for rule in RULES}
    params = gate_params(gate)
    previous: GateResult = pending_result(params)
    uncorrected_previous: GateResult = pending_result(params)
    measured = 0.0
    for at in LOOKS:
        source.advance(at - measured)
        measured = at
        seen = source.observe()
        samples = samples_of(seen, gate)
        # No streamed chunks is Mirror traffic: the only case the counters' bound is used.
        mirror = isinstance(source, AcceptanceSource) and not source.stream
        plan = LookPlan(measured_seconds=at, max_seconds=MAX_SECONDS, mirror=mirror)
        verdicts: dict[str, GateVerdict] = {}
        if outcomes["today"].verdict is None:
            verdicts["today"] = today(seen)[0]
        if outcomes["new"].verdict is None:
            previous = evaluate_gate(params, seen, previous, T0, plan)
            verdicts["new"] = previous.verdict
        if gate.type is not GateType.TAIL_LATENCY:
            outcomes["no-HAC"] = outcomes["new"]  # nothing block-based to correct
        elif outcomes["no-HAC"].verdict is None:
            with independent_blocks():
                uncorrected = evaluate_gate(params, seen, uncorrected_previous, T0, plan)
            uncorrected_previous = uncorrected
            verdicts["no-HAC"] = uncorrected.verdict
        if at >= MAX_SECONDS and outcomes["fixed"].verdict is None:
            fixed = measure_for(gate.type).measure(params, seen, Look(ERROR, mirror=mirror))
            verdicts["fixed"] = fixed.verdict
        for rule, verdict in verdicts.items():
            decided = verdict is GateVerdict.FAILED or (
                verdict is GateVerdict.SUCCESSFUL and at >= MIN_SECONDS
            )
            if decided:
                outcomes[rule] = Outcome(verdict, samples, at)
        if all(o.verdict is not None for o in outcomes.values()):
            break
    return outcomes


def _cells(runs: list[Outcome]) -> str:
    n = len(runs)
    promoted = sum(r.verdict is GateVerdict.SUCCESSFUL for r in runs) / n
    rolled = sum(r.verdict is GateVerdict.FAILED for r in runs) / n
    decided = [r for r in runs if r.verdict is not None]
    samples = f"{statistics.median(r.samples for r in decided):>8.0f}" if decided else "       -"
    seconds = f"{statistics.median(r.seconds for r in decided):>4.0f}" if decided else "   -"
    undecided = max(0.0, 1 - promoted - rolled)
    return f"{100 * promoted:5.1f} {100 * rolled:5.1f} {100 * undecided:5.1f} {samples} {seconds}"


def _wilson(runs: list[Outcome], verdict: GateVerdict) -> str:
    """A share of runs with its two-sided 95 % Wilson interval, in percent."""
    share = sum(r.verdict is verdict for r in runs) / len(runs)
    low, high = wilson_bounds(share, len(runs), 0.025)
    return f"{100 * share:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def print_row(label: str, per_rule: dict[str, list[Outcome]], elapsed: float) -> None:
    """One row; then the new rule's promoted and rolled-back shares with 95 % intervals."""
    cells = " | ".join(_cells(per_rule[rule]) for rule in RULES)
    new = per_rule["new"]
    intervals = f"{_wilson(new, GateVerdict.SUCCESSFUL)} / {_wilson(new, GateVerdict.FAILED)}"
    print(f"{label:<52} {len(new):>4} | {cells} | {intervals} | {elapsed:5.0f}s", flush=True)


def per_request_alpha_sd(concentration: float, alpha: float) -> float:
    """Spread of per-request alpha, (r + r^2 + r^3) / 3 with r ~ Beta, by simulation."""
    rng = random.Random(0)
    mean = beta_mean_for_alpha(alpha, concentration)
    a, b = mean * concentration, (1 - mean) * concentration
    values = [(r + r * r + r**3) / 3 for r in (rng.betavariate(a, b) for _ in range(4000))]
    return statistics.pstdev(values)


# (label, true alpha, Beta concentration of per-request r, streamed chunks)
WIDE = 1.2
ACCEPTANCE_ROWS = [
    ("alpha 0.55 (threshold)", 0.55, BETA_CONCENTRATION, True),
    ("alpha 0.55 (threshold), wide mix", 0.55, WIDE, True),
    ("alpha 0.55 (threshold), no stream", 0.55, BETA_CONCENTRATION, False),
    ("alpha 0.62", 0.62, BETA_CONCENTRATION, True),
    ("alpha 0.75", 0.75, BETA_CONCENTRATION, True),
    ("alpha 0.75, wide mix", 0.75, WIDE, True),
    ("alpha 0.45", 0.45, BETA_CONCENTRATION, True),
    ("alpha 0.505 (translation-like)", 0.505, BETA_CONCENTRATION, True),
]
# (label, true ratio, steps/s per side (None: a busy engine's), batch, jitter, tokens per
# chunk, drift, tail log-sd, AR(1) of step times, prefill waves); batch 1 rows take 100
# independent samples/s
BUSY = None
LATENCY_ROWS = [
    ("P99 1.10 (threshold), independent", 1.10, 100, 1, 0.0, 1, 0.0, 0.5, 0.0, 0),
    ("P99 1.10 (threshold), batch 8", 1.10, BUSY, 8, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.10 (threshold), batch 32", 1.10, BUSY, 32, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.10 (threshold), batch 128", 1.10, BUSY, 128, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.10 (threshold), batch 32, 2 % jitter", 1.10, BUSY, 32, 0.02, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.10 (threshold), batch 32, 8 steps/s", 1.10, 8, 32, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.10 (threshold), batch 128, 10 steps/s", 1.10, 10, 128, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.10 (threshold), batch 8, heavy tail", 1.10, BUSY, 8, 0.1, 3, 0.0, 0.9, 0.0, 0),
    ("P99 1.10 (threshold), batch 8, drift +50 %", 1.10, BUSY, 8, 0.1, 3, 0.5, 0.5, 0.0, 0),
    ("P99 1.00, independent", 1.00, 100, 1, 0.0, 1, 0.0, 0.5, 0.0, 0),
    ("P99 1.00, batch 8", 1.00, BUSY, 8, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.00, batch 32", 1.00, BUSY, 32, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.00, batch 128", 1.00, BUSY, 128, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.00, batch 32, 2 % jitter", 1.00, BUSY, 32, 0.02, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.00, batch 32, 21 steps/s", 1.00, 21, 32, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.00, batch 32, 8 steps/s", 1.00, 8, 32, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.00, batch 128, 10 steps/s", 1.00, 10, 128, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.00, batch 32, heavy tail", 1.00, BUSY, 32, 0.1, 3, 0.0, 0.9, 0.0, 0),
    ("P99 0.90, batch 8", 0.90, BUSY, 8, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.30, batch 8", 1.30, BUSY, 8, 0.1, 3, 0.0, 0.5, 0.0, 0),
    ("P99 1.30, independent", 1.30, 100, 1, 0.0, 1, 0.0, 0.5, 0.0, 0),
    # Dependence between steps (DependentSteps): AR(1) step times and 4 prefill waves
    (
        "P99 1.10 (threshold), batch 8, AR measured, waves",
        1.10,
        BUSY,
        8,
        0.1,
        3,
        0.0,
        0.5,
        STEP_AR1,
        4,
    ),
    (
        "P99 1.10 (threshold), batch 32, AR measured, waves",
        1.10,
        BUSY,
        32,
        0.1,
        3,
        0.0,
        0.5,
        STEP_AR1,
        4,
    ),
    ("P99 1.10 (threshold), batch 8, AR 0.9, waves", 1.10, BUSY, 8, 0.1, 3, 0.0, 0.5, 0.9, 4),
    ("P99 1.10 (threshold), batch 8, AR 0.99, waves", 1.10, BUSY, 8, 0.1, 3, 0.0, 0.5, 0.99, 4),
    ("P99 1.00, batch 8, AR measured, waves", 1.00, BUSY, 8, 0.1, 3, 0.0, 0.5, STEP_AR1, 4),
    ("P99 1.00, batch 8, AR 0.99, waves", 1.00, BUSY, 8, 0.1, 3, 0.0, 0.5, 0.99, 4),
]


def selected(label: str, rows: list[str] | None) -> bool:
    """Whether a row is asked for: no --rows means all; else any regex found in its label."""
    return rows is None or any(re.search(pattern, label) for pattern in rows)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300, help="stages per acceptance row")
    parser.add_argument("--latency-trials", type=int, default=60, help="stages per latency row")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--only", choices=("acceptance", "latency"), default=None)
    parser.add_argument(
        "--rows", nargs="+", default=None, help="only rows whose label matches any regex"
    )
    args = parser.parse_args()
    rule_head = f"{'prom%':>5} {'roll%':>5} {'und%':>5} {'samples':>8} {'sec':>4}"
    print(
        f"{'true effect (threshold)':<52} {'runs':>4} | "
        + " | ".join(f"{r:^32}" for r in RULES)
        + " | new: prom % [95 % Wilson] / roll % [95 % Wilson]"
    )
    print(f"{'':<52} {'':>4} | " + " | ".join(rule_head for _ in RULES))
    if args.only != "latency":
        for label, alpha, concentration, stream in ACCEPTANCE_ROWS:
            if not selected(label, args.rows):
                continue
            rng = random.Random(f"{args.seed}:{label}")  # a row's draws do not depend on --rows
            started = time.perf_counter()
            sd = per_request_alpha_sd(concentration, alpha)
            runs = [
                run(
                    ALPHA_GATE,
                    AcceptanceSource(alpha, rng, concentration=concentration, stream=stream),
                    today_acceptance,
                )
                for _ in range(args.trials)
            ]
            per_rule = {rule: [r[rule] for r in runs] for rule in RULES}
            print_row(f"{label} (sd {sd:.2f})", per_rule, time.perf_counter() - started)
    if args.only != "acceptance":
        for label, ratio, steps, batch, jitter, tokens, drift, tail, ar1, waves in LATENCY_ROWS:
            if not selected(label, args.rows):
                continue
            rng = random.Random(f"{args.seed}:{label}")
            started = time.perf_counter()
            per_second = steps or busy_steps_per_second(tail)
            rate = per_second if batch == 1 else per_second * batch
            runs = [
                run(
                    P99_GATE,
                    LatencySource(
                        ratio,
                        rng,
                        rate,
                        batch=batch,
                        jitter=jitter,
                        max_tokens=tokens,
                        drift=drift,
                        tail_sigma=tail,
                        steps_per_second=per_second if batch > 1 else None,
                        ar1=ar1,
                        waves=waves,
                    ),
                    today_latency,
                )
                for _ in range(max(args.latency_trials, DEPENDENT_TRIALS if ar1 or waves else 0))
            ]
            per_rule = {rule: [r[rule] for r in runs] for rule in RULES}
            print_row(label, per_rule, time.perf_counter() - started)


if __name__ == "__main__":
    main()
