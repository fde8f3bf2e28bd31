"""The ErrorRate gate: candidate against baseline on the same shadow requests.

Its verdicts, and its wrong-verdict rate at the threshold over whole repeated-look stages
(seeded simulation through the domain's Analyzing step, as domain_gatesim runs the other
gates), each paired with a power check so "no wrong verdict" cannot hold merely because
nothing was decided.
"""

from __future__ import annotations

import random

import pytest
from domain_fixtures import T0, stage_obs
from domain_gatesim import Outcome, StageRun, run_stage, single_stage_spec
from gate_looks import evaluate_gate

from specdecode.api import GateSpec, GateType, GateVerdict
from specdecode.domain.gates import LookPlan
from specdecode.domain.gates.error_rate import failure_difference
from specdecode.domain.observations import LatencySamples, MetricError, StageObservations
from specdecode.domain.stats import wilson_interval

pytestmark = pytest.mark.unit

LOOK = LookPlan(measured_seconds=300, max_seconds=600)  # a first look half-way
GATE = GateSpec(name="errors", type=GateType.ERROR_RATE, max_error_rate=0.01)  # 20 requests
MAX_WRONG = 0.05  # 1 - the default confidence
TRIALS = 300


def _side(ok: int, failed: int) -> LatencySamples:
    return LatencySamples.from_values(requests_ok=ok, requests_failed=failed)


def _verdict(baseline: LatencySamples | MetricError | None, candidate: LatencySamples) -> str:
    seen = stage_obs("s", baseline=baseline, candidate=candidate)
    return evaluate_gate(GATE, seen, None, T0, LOOK).verdict


def test_judges_the_difference_from_the_baseline() -> None:
    clean, broken = _side(3000, 3), _side(2700, 300)
    assert _verdict(clean, clean) is GateVerdict.SUCCESSFUL
    assert _verdict(clean, broken) is GateVerdict.FAILED
    # both sides fail 2 %: the candidate's config adds nothing (the old candidate-only
    # rule failed this); and a baseline that fails more does not make the candidate fail
    assert _verdict(_side(5880, 120), _side(5880, 120)) is GateVerdict.SUCCESSFUL
    assert _verdict(_side(2700, 300), clean) is GateVerdict.SUCCESSFUL
    # 2 % extra on the candidate, against maxErrorRate 1 %: too close to call at 1,000
    assert _verdict(_side(990, 10), _side(970, 30)) is GateVerdict.INCONCLUSIVE


def test_needs_both_sides_and_min_samples() -> None:
    assert _verdict(None, _side(3000, 0)) is GateVerdict.INCONCLUSIVE
    assert _verdict(_side(19, 0), _side(3000, 0)) is GateVerdict.INCONCLUSIVE
    assert _verdict(MetricError("load", "no answer"), _side(3000, 0)) is GateVerdict.ERROR
    result = evaluate_gate(
        GATE, stage_obs("s", baseline=_side(5, 0), candidate=_side(5, 0)), None, T0, LOOK
    )
    assert result.verdict is GateVerdict.INCONCLUSIVE


def test_newcombe_bounds_hold_the_difference() -> None:
    interval = failure_difference((30, 1000), (10, 1000), 0.025)
    assert interval is not None
    assert interval.value == pytest.approx(0.02)
    assert 0.0 < interval.lower < 0.02 < interval.upper < 0.04
    assert failure_difference((0, 0), (0, 10), 0.05) is None


class ErrorSource:
    """Both sides' shadow requests at a steady rate, each failing with its side's chance."""

    def __init__(self, baseline: float, candidate: float, rng: random.Random) -> None:
        self.chances = (baseline, candidate)
        self.rng = rng
        self.counts = [[0, 0], [0, 0]]  # per side: ok, failed
        self.rate = 10.0  # requests per second per side (concurrency 32, ~3 s each)

    def advance(self, seconds: float) -> None:
        for side, chance in enumerate(self.chances):
            for _ in range(round(seconds * self.rate)):
                self.counts[side][self.rng.random() < chance] += 1

    def observe(self) -> StageObservations:
        base, cand = (_side(ok, failed) for ok, failed in self.counts)
        return StageObservations("stage", baseline_latency=base, candidate_latency=cand)


def _runs(baseline: float, candidate: float, seed: int, trials: int) -> list[StageRun]:
    rng = random.Random(seed)
    spec = single_stage_spec(GATE, concurrency=32)
    return [
        run_stage(spec, ErrorSource(baseline, candidate, rng))  # type: ignore[arg-type]
        for _ in range(trials)
    ]


def _rate_with_interval(runs: list[StageRun], outcome: Outcome) -> tuple[float, str]:
    hits = sum(run.outcome is outcome for run in runs)
    interval = wilson_interval(hits, len(runs), 0.025)  # two-sided 95 %
    assert interval is not None
    text = (
        f"{outcome}: {hits}/{len(runs)} = {interval.value:.3f} "
        f"(95 % binomial interval [{interval.lower:.3f}, {interval.upper:.3f}])"
    )
    return interval.value, text


def test_at_the_threshold_wrong_verdicts_stay_within_the_error() -> None:
    # The candidate fails 1 % more requests than the baseline: exactly maxErrorRate.
    runs = _runs(0.01, 0.02, seed=21, trials=TRIALS)
    promoted, promoted_text = _rate_with_interval(runs, Outcome.PROMOTED)
    rolled_back, rolled_back_text = _rate_with_interval(runs, Outcome.ROLLED_BACK)
    print(promoted_text, rolled_back_text)
    # allowed: the error plus the binomial noise of TRIALS stages (one-sided, 95 %)
    allowed = MAX_WRONG + 1.645 * (MAX_WRONG * (1 - MAX_WRONG) / TRIALS) ** 0.5
    assert promoted <= allowed, f"wrong promotions at the threshold: {promoted_text}"
    assert rolled_back <= allowed, f"wrong rollbacks at the threshold: {rolled_back_text}"


@pytest.mark.parametrize(
    ("baseline", "candidate", "expected"),
    [
        (0.0, 0.10, Outcome.ROLLED_BACK),  # the fault e2e's 10 %-failing candidate
        (0.02, 0.02, Outcome.PROMOTED),  # both fail alike: not the candidate's doing
        (0.0, 0.0, Outcome.PROMOTED),
    ],
)
def test_clear_effects_are_decided(baseline: float, candidate: float, expected: Outcome) -> None:
    runs = _runs(baseline, candidate, seed=22, trials=40)
    rate, text = _rate_with_interval(runs, expected)
    assert rate >= 0.95, text
