"""Gate statistics over whole repeated-look stages: error rates at the threshold, and the
samples a decision needs at a few true effects (seeded simulation, see domain_gatesim).

The rates printed here (run with `-s`) are the ones `benchmarks/gates.py` tabulates with
more trials.
"""

from __future__ import annotations

import random
import statistics

import pytest
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

from specdecode.api import GateSpec, GateType
from specdecode.domain import acceptance_bound, gates

pytestmark = pytest.mark.unit

ALPHA_GATE = GateSpec(name="alpha", type=GateType.ACCEPTANCE, min_alpha=0.55)
P99_GATE = GateSpec(name="p99-itl", type=GateType.TAIL_LATENCY, quantile=0.99, tolerance=0.10)
MAX_WRONG = 0.05  # 1 - default confidence


def _rate(runs: list[StageRun], outcome: Outcome) -> float:
    return sum(run.outcome is outcome for run in runs) / len(runs)


@pytest.mark.parametrize(
    ("report_requests", "concentration"),
    [(True, BETA_CONCENTRATION), (False, BETA_CONCENTRATION), (True, WIDE_CONCENTRATION)],
    ids=["requests", "no-requests", "wide-prompt-mix"],
)
def test_acceptance_at_threshold_is_rarely_promoted_or_rolled_back(
    report_requests: bool, concentration: float
) -> None:
    # 150 stages of 42 looks each; with a true rate of 10 % the chance of seeing <= 5 %
    # would be ~1 %, so the assertion can fail.
    rng = random.Random(11)
    spec = single_stage_spec(ALPHA_GATE, concurrency=4)
    runs = [
        run_stage(
            spec,
            AcceptanceSource(
                0.55, rng, report_requests=report_requests, concentration=concentration
            ),
        )
        for _ in range(150)
    ]
    wrong_promotion = _rate(runs, Outcome.PROMOTED)
    wrong_rollback = _rate(runs, Outcome.ROLLED_BACK)
    print(
        f"alpha=0.55 vs 0.55: wrong promotion {wrong_promotion:.3f}, rollback {wrong_rollback:.3f}"
    )
    assert wrong_promotion <= MAX_WRONG
    assert wrong_rollback <= MAX_WRONG


def test_tail_latency_at_threshold_is_rarely_promoted_or_rolled_back() -> None:
    rng = random.Random(12)
    spec = single_stage_spec(P99_GATE, concurrency=32)
    runs = [run_stage(spec, LatencySource(1.10, rng, samples_per_second=10)) for _ in range(100)]
    wrong_promotion = _rate(runs, Outcome.PROMOTED)
    wrong_rollback = _rate(runs, Outcome.ROLLED_BACK)
    print(
        f"P99 ratio 1.10 vs 1.10: wrong promotion {wrong_promotion:.3f}, "
        f"rollback {wrong_rollback:.3f}"
    )
    assert wrong_promotion <= MAX_WRONG
    assert wrong_rollback <= MAX_WRONG


def test_the_simulation_catches_a_naive_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without look spending and without the intra-request correlation, the same harness
    # sees far more than 5 % wrong verdicts at the threshold: the tests above can fail.
    monkeypatch.setattr(gates, "per_look_error", lambda confidence, looks: 1 - confidence)
    monkeypatch.setattr(acceptance_bound, "RHO", 0.0)
    rng = random.Random(15)
    spec = single_stage_spec(ALPHA_GATE, concurrency=4)
    runs = [run_stage(spec, AcceptanceSource(0.55, rng, report_requests=False)) for _ in range(60)]
    wrong = _rate(runs, Outcome.PROMOTED) + _rate(runs, Outcome.ROLLED_BACK)
    print(f"naive gate at the threshold: wrong verdicts {wrong:.3f}")
    assert wrong > 3 * MAX_WRONG


@pytest.mark.parametrize(
    ("alpha", "expected", "most_tokens"),
    [(0.75, Outcome.PROMOTED, 40_000), (0.35, Outcome.ROLLED_BACK, 40_000)],
)
def test_acceptance_decides_clear_effects_within_the_stage(
    alpha: float, expected: Outcome, most_tokens: int
) -> None:
    rng = random.Random(13)
    spec = single_stage_spec(ALPHA_GATE, concurrency=4)
    runs = [run_stage(spec, AcceptanceSource(alpha, rng)) for _ in range(20)]
    assert _rate(runs, expected) == 1.0
    median_tokens = statistics.median(run.samples for run in runs)
    print(f"alpha={alpha} vs 0.55: median {median_tokens:.0f} draft tokens to decide")
    assert median_tokens <= most_tokens


@pytest.mark.parametrize(
    ("ratio", "expected", "most_samples"),
    [(0.90, Outcome.PROMOTED, 30_000), (1.30, Outcome.ROLLED_BACK, 40_000)],
)
def test_tail_latency_decides_clear_effects_within_the_stage(
    ratio: float, expected: Outcome, most_samples: int
) -> None:
    rng = random.Random(14)
    spec = single_stage_spec(P99_GATE, concurrency=32)
    runs = [run_stage(spec, LatencySource(ratio, rng, samples_per_second=100)) for _ in range(8)]
    assert _rate(runs, expected) == 1.0
    median_samples = statistics.median(run.samples for run in runs)
    print(f"P99 ratio {ratio} vs 1.10: median {median_samples:.0f} ITL samples per side")
    assert median_samples <= most_samples
