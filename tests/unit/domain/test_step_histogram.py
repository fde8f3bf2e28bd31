"""The ServerStep TailLatency gate: vLLM's step-ITL histogram, bounded by bucket edges.

Hand-computed interpolation and bounds, the effective-sample correction for observations
that share an engine step, single-look verdicts, and a seeded simulation of whole stages at
the threshold (as test_domain_gate_error_rates does for client samples).
The simulated histograms come from `domain_stepsim`, which `benchmarks/gates.py` shares.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from bisect import bisect_left
from collections.abc import Iterable
from itertools import accumulate

import pytest
from domain_fixtures import T0
from domain_gatesim import STEP_AR1, Outcome, StageRun, run_stage, single_stage_spec
from domain_stepsim import SERVER_P99, STRADDLING_MEDIAN, VLLM_BOUNDS, StepHistogramSource
from gate_looks import evaluate_gate

from specdecode.adapters.gate_boundary import gate_params
from specdecode.api import GateSpec, GateVerdict, ItlDefinition
from specdecode.domain import gate_boundary, step_histogram
from specdecode.domain.gate_measures import Measurement
from specdecode.domain.gates import LookPlan
from specdecode.domain.observations import (
    MetricError,
    ServerStepHistograms,
    StageObservations,
    StepHistogram,
)
from specdecode.domain.stats import Interval, quantile_rank_bounds
from specdecode.domain.step_histogram import (
    histogram_quantile,
    measure_server_step_tail,
    quantile_bucket_interval,
)

pytestmark = pytest.mark.unit

ERROR = 0.05 / 42  # a small per-look error: the Bonferroni share of a 42-look stage
MAX_WRONG = 0.05  # 1 - default confidence


def bucketed(latencies: Iterable[float]) -> StepHistogram:
    """Latencies (seconds) counted into vLLM's ITL buckets, cumulative (`le`), one request
    per engine step (the step count, as `vllm:iteration_tokens_total` gives it, equals them)."""
    counts = [0] * len(VLLM_BOUNDS)
    for latency in latencies:
        counts[bisect_left(VLLM_BOUNDS, latency)] += 1
    cumulative = tuple(float(c) for c in accumulate(counts))
    return StepHistogram(VLLM_BOUNDS, cumulative, cumulative[-1])


def body_and_tail(steps: int, body: float, tail: float, tail_share: float = 0.03) -> StepHistogram:
    """`steps` latencies: most at `body` seconds, `tail_share` of them at `tail`."""
    in_tail = round(steps * tail_share)
    return bucketed([body] * (steps - in_tail) + [tail] * in_tail)


# Cumulative counts 100, 700, 950, 990, 1000 over (0, 10], (10, 25], (25, 50], (50, 75], +Inf.
SMALL = StepHistogram((0.01, 0.025, 0.05, 0.075, math.inf), (100.0, 700.0, 950.0, 990.0, 1000.0))


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        (0.05, 0.01 * 50 / 100),  # first bucket: from 0
        (0.5, 0.01 + 0.015 * 400 / 600),
        (0.9, 0.025 + 0.025 * 200 / 250),
        (0.99, 0.05 + 0.025 * 40 / 40),
        (0.995, 0.075),  # in the +Inf bucket: the largest finite bound, as Prometheus
    ],
)
def test_histogram_quantile_interpolates_as_prometheus_does(q: float, expected: float) -> None:
    assert histogram_quantile(SMALL, q) == pytest.approx(expected)


def test_no_observations_have_no_quantile() -> None:
    zeros = StepHistogram(VLLM_BOUNDS, (0.0,) * len(VLLM_BOUNDS))
    assert histogram_quantile(zeros, 0.99) is None
    assert histogram_quantile(StepHistogram(), 0.99) is None
    assert quantile_bucket_interval(zeros, 0.99, ERROR) is None
    assert zeros.total == 0.0 and StepHistogram().total == 0.0


def test_extrapolated_counts_that_dip_are_made_monotone() -> None:
    # increase() extrapolates each bucket alone: a neighbour may come out slightly lower.
    dipping = StepHistogram((0.01, 0.025, math.inf), (10.2, 10.1, 20.0))
    assert histogram_quantile(dipping, 0.5) == pytest.approx(0.01 * 10 / 10.2)


def test_a_histogram_must_end_with_the_inf_bucket() -> None:
    with pytest.raises(ValueError, match="Inf"):
        StepHistogram((0.01, 0.025), (1.0, 2.0))


def _cumulative(bounds: tuple[float, ...], per_bucket: tuple[int, ...]) -> StepHistogram:
    return StepHistogram(bounds, tuple(float(c) for c in accumulate(per_bucket)))


BOUNDS = (0.01, 0.025, 0.05, 0.075, math.inf)


def test_both_ranks_in_one_bucket_give_its_edges() -> None:
    # n = 100000: the P99 ranks at error 0.001 are 99000 -/+ ~100, inside (50, 75] ms.
    h = _cumulative(BOUNDS, (0, 50_000, 48_000, 1_500, 500))
    interval = quantile_bucket_interval(h, 0.99, 0.001)
    assert interval is not None and interval.value == pytest.approx(0.05 + 0.025 * 1000 / 1500)
    assert interval == Interval(value=interval.value, lower=0.05, upper=0.075, samples=100_000)


def test_ranks_across_an_edge_span_both_buckets() -> None:
    h = _cumulative(BOUNDS, (0, 50_000, 48_950, 550, 500))  # 98950 at or below 50 ms
    interval = quantile_bucket_interval(h, 0.99, 0.001)
    assert interval is not None
    assert (interval.lower, interval.upper) == (0.025, 0.075)


def test_the_first_bucket_bounds_from_zero_and_the_inf_bucket_is_unbounded() -> None:
    first = _cumulative(BOUNDS, (100_000, 0, 0, 0, 0))
    interval = quantile_bucket_interval(first, 0.99, 0.001)
    assert interval is not None and (interval.lower, interval.upper) == (0.0, 0.01)
    overflow = _cumulative(BOUNDS, (0, 98_000, 0, 0, 2_000))
    interval = quantile_bucket_interval(overflow, 0.99, 0.001)
    assert interval is not None
    assert (interval.lower, interval.upper) == (0.075, math.inf)
    assert interval.value == 0.075  # Prometheus's point estimate stays finite


def test_too_few_steps_have_no_rank_bounds() -> None:
    assert quantile_bucket_interval(_cumulative(BOUNDS, (0, 90, 10, 0, 0)), 0.99, 0.001) is None


def _measure(
    baseline: StepHistogram, candidate: StepHistogram, gate: GateSpec = SERVER_P99
) -> Measurement:
    pair = ServerStepHistograms(baseline=baseline, candidate=candidate)
    return measure_server_step_tail(gate_params(gate), pair, ERROR)


def test_a_candidate_a_whole_bucket_below_passes() -> None:
    found = _measure(body_and_tail(5000, 0.020, 0.060), body_and_tail(5000, 0.020, 0.040))
    assert found.verdict is GateVerdict.SUCCESSFUL
    assert found.upper_bound == pytest.approx(1.0)  # 50 ms / 50 ms
    assert "candidate in (25, 50] ms, baseline in (50, 75] ms; " in found.reason
    assert found.reason.endswith("; 5000 / 5000 observations in 5000 / 5000 steps)")
    assert found.baseline_value is not None and 0.05 < found.baseline_value <= 0.075
    assert found.candidate_value is not None and 0.025 < found.candidate_value <= 0.05


def test_a_candidate_a_bucket_clear_above_fails() -> None:
    found = _measure(body_and_tail(5000, 0.015, 0.020), body_and_tail(5000, 0.015, 0.060))
    assert found.verdict is GateVerdict.FAILED
    assert found.lower_bound == pytest.approx(2.0)  # 50 ms / 25 ms
    assert found.reason.startswith("server step P99 ITL ratio ")


def test_adjacent_buckets_above_cannot_fail_and_the_same_bucket_cannot_decide() -> None:
    # Candidate in (50, 75], baseline in (25, 50]: the ratio may be as low as 1.0.
    above = _measure(body_and_tail(5000, 0.020, 0.040), body_and_tail(5000, 0.020, 0.060))
    assert above.verdict is GateVerdict.INCONCLUSIVE
    same = _measure(body_and_tail(5000, 0.020, 0.030), body_and_tail(5000, 0.020, 0.045))
    assert same.verdict is GateVerdict.INCONCLUSIVE
    assert same.lower_bound == pytest.approx(0.5) and same.upper_bound == pytest.approx(2.0)


def test_a_baseline_in_the_first_bucket_leaves_the_ratio_unbounded_above() -> None:
    fast = bucketed([0.005] * 5000)
    unbounded = _measure(fast, fast)
    assert unbounded.verdict is GateVerdict.INCONCLUSIVE
    assert unbounded.upper_bound is None  # infinite: JSON status has no infinity
    assert "[0.00, inf]" in unbounded.reason
    slow = _measure(fast, body_and_tail(5000, 0.020, 0.060))
    assert slow.verdict is GateVerdict.FAILED  # the lower bound alone can still fail


def test_metric_errors_and_missing_histograms() -> None:
    down = measure_server_step_tail(
        gate_params(SERVER_P99), MetricError("prometheus", "timeout"), ERROR
    )
    assert down.verdict is GateVerdict.ERROR and "timeout" in down.reason
    missing = measure_server_step_tail(gate_params(SERVER_P99), None, ERROR)
    assert missing.verdict is GateVerdict.INCONCLUSIVE
    assert missing.reason == "no step histogram yet"
    empty = _measure(StepHistogram(steps=0.0), StepHistogram(steps=0.0))
    assert empty.verdict is GateVerdict.INCONCLUSIVE and empty.samples == 0


def test_min_samples_holds_back_a_verdict() -> None:
    baseline, candidate = body_and_tail(5000, 0.020, 0.060), body_and_tail(5000, 0.020, 0.040)
    strict = SERVER_P99.model_copy(update={"min_samples": 20_000})
    held = _measure(baseline, candidate, strict)
    assert held.verdict is GateVerdict.INCONCLUSIVE
    assert (
        "5000 candidate / 5000 baseline effective samples (5000 / 5000 observations "
        "in 5000 / 5000 steps); 20000 per side needed"
    ) in held.reason
    few = _measure(body_and_tail(300, 0.020, 0.060), body_and_tail(300, 0.020, 0.040))
    assert few.verdict is GateVerdict.INCONCLUSIVE  # no order-statistic bound at 300 steps


def test_a_server_step_gate_is_judged_on_the_histogram() -> None:
    pair = ServerStepHistograms(
        baseline=body_and_tail(5000, 0.020, 0.060), candidate=body_and_tail(5000, 0.020, 0.040)
    )
    observations = StageObservations(stage_name="s", server_step_itl=pair)
    result = evaluate_gate(SERVER_P99, observations, None, T0, LookPlan(300, 600))
    assert result.verdict is GateVerdict.SUCCESSFUL
    assert result.itl_definition is ItlDefinition.SERVER_STEP
    assert result.server_candidate_value == result.candidate_value
    failed = StageObservations(stage_name="s", server_step_itl=MetricError("prom", "5xx"))
    assert evaluate_gate(SERVER_P99, failed, None, T0, LookPlan(300, 600)).verdict is (
        GateVerdict.ERROR
    )


def _batched(h: StepHistogram, batch: int, steps: float | None) -> StepHistogram:
    """Each observation of `h` recorded `batch` times, as by every request of a batch."""
    return StepHistogram(h.upper_bounds, tuple(c * batch for c in h.cumulative_counts), steps)


def test_equal_batches_with_their_step_count_are_bounded_as_the_steps_alone() -> None:
    steps = _cumulative(BOUNDS, (0, 500, 480, 15, 5))  # 1000 independent steps
    batched = _batched(steps, 100, steps=1000.0)  # 100 requests per step: 100000 observations
    assert quantile_bucket_interval(batched, 0.99, 0.001) == quantile_bucket_interval(
        steps, 0.99, 0.001
    )
    assert step_histogram.effective_samples(batched) == 1000


def test_fewer_steps_than_observations_widen_the_bound() -> None:
    h = _cumulative(BOUNDS, (0, 50_000, 48_500, 1_400, 100))  # 98500 at or below 50 ms
    counted = quantile_bucket_interval(h, 0.99, 0.001)
    assert counted is not None and (counted.lower, counted.upper) == (0.05, 0.075)
    # The same counts from 1000 steps of 100 requests: rank 99000 -/+ ~10 steps, not ~1.
    stepped = quantile_bucket_interval(dataclasses.replace(h, steps=1000.0), 0.99, 0.001)
    assert stepped is not None and (stepped.lower, stepped.upper) == (0.025, 0.075)
    assert stepped.samples == 1000 and stepped.value == counted.value  # same point estimate


@pytest.mark.parametrize("steps", [None, 100_000.0, 250_000.0])
def test_unknown_steps_or_as_many_as_observations_change_nothing(steps: float | None) -> None:
    h = _cumulative(BOUNDS, (0, 50_000, 48_500, 1_000, 500))
    assert quantile_bucket_interval(dataclasses.replace(h, steps=steps), 0.99, 0.001) == (
        quantile_bucket_interval(h, 0.99, 0.001)
    )
    assert step_histogram.effective_samples(dataclasses.replace(h, steps=steps)) == 100_000


def test_a_negative_or_nan_step_count_is_rejected() -> None:
    for steps in (-1.0, math.nan):
        with pytest.raises(ValueError, match="steps"):
            StepHistogram(BOUNDS, (0.0, 1.0, 2.0, 3.0, 4.0), steps)


def _tail_pair(steps: float | None) -> tuple[StepHistogram, StepHistogram]:
    """Baseline's P99 just above 50 ms, candidate's in (25, 50]: 100000 observations each."""
    baseline = body_and_tail(100_000, 0.020, 0.060, tail_share=0.015)
    candidate = body_and_tail(100_000, 0.020, 0.040, tail_share=0.015)
    return dataclasses.replace(baseline, steps=steps), dataclasses.replace(candidate, steps=steps)


def test_a_pass_on_many_requests_of_few_steps_becomes_inconclusive() -> None:
    assert _measure(*_tail_pair(100_000.0)).verdict is GateVerdict.SUCCESSFUL
    assert _measure(*_tail_pair(200_000.0)).verdict is GateVerdict.SUCCESSFUL
    few = _measure(*_tail_pair(1000.0))  # 100 requests per step
    assert few.verdict is GateVerdict.INCONCLUSIVE
    assert few.samples == 1000
    assert "candidate in (10, 50] ms, baseline in (10, 75] ms" in few.reason
    assert few.reason.endswith("; 100000 / 100000 observations in 1000 / 1000 steps)")


def test_the_per_side_minimum_counts_steps_not_observations() -> None:
    baseline, candidate = _tail_pair(100_000.0)
    held = _measure(dataclasses.replace(baseline, steps=300.0), candidate)
    assert held.verdict is GateVerdict.INCONCLUSIVE and held.samples == 300
    assert held.reason.startswith(
        "server step P99 ITL: 100000 candidate / 300 baseline effective samples "
        "(100000 / 100000 observations in 100000 / 300 steps); "
    )
    no_steps = _measure(*_tail_pair(0.0))  # steps known to be none: nothing to count on
    assert no_steps.verdict is GateVerdict.INCONCLUSIVE and no_steps.samples == 0


def _rate(runs: list[StageRun], outcome: Outcome) -> float:
    return sum(run.outcome is outcome for run in runs) / len(runs)


def _runs_at_threshold(
    seed: int, trials: int, steps: float, batch: int, report_steps: bool = True, ar1: float = 0.0
) -> list[StageRun]:
    rng = random.Random(seed)
    spec = single_stage_spec(SERVER_P99, concurrency=32)
    source = functools.partial(
        StepHistogramSource, 1.10, rng, STRADDLING_MEDIAN, steps, batch, report_steps, ar1
    )
    return [run_stage(spec, source()) for _ in range(trials)]


@pytest.mark.parametrize(
    ("steps", "batch", "trials", "ar1"),
    [
        (48, 1, 50, 0.0),
        (32, 8, 30, 0.0),
        (2, 32, 100, 0.0),
        (1, 64, 100, 0.0),
        (32, 8, 30, STEP_AR1),
    ],
    ids=["independent-steps", "batches-of-8", "few-steps-x32", "fewer-steps-x64", "measured-ar1"],
)
def test_at_the_threshold_the_histogram_gate_rarely_promotes_or_rolls_back(
    steps: float, batch: int, trials: int, ar1: float
) -> None:
    # True P99 ratio exactly 1.10, the 50 ms edge between the two P99s. A busy engine at
    # ~27 ms per step takes ~32 steps a second, each recorded once per request in the batch;
    # the stress cases have few distinct steps and big batches. The step count is supplied.
    # measured-ar1: consecutive steps' latencies autocorrelated at the coefficient measured
    # on the simulator's step trace (domain_gatesim.STEP_AR1).
    runs = _runs_at_threshold(seed=21, trials=trials, steps=steps, batch=batch, ar1=ar1)
    wrong_promotion = _rate(runs, Outcome.PROMOTED)
    wrong_rollback = _rate(runs, Outcome.ROLLED_BACK)
    print(
        f"step P99 1.10 vs 1.10 ({steps} steps/s x {batch}): promoted {wrong_promotion:.3f}, "
        f"rolled back {wrong_rollback:.3f}"
    )
    assert wrong_promotion <= MAX_WRONG
    assert wrong_rollback <= MAX_WRONG


def test_the_simulation_catches_a_gate_that_counts_every_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Control for the stress cases above and for the refusal below: the rule that judged
    # without the step count (64 requests of one step counted as 64 independent
    # observations) put back, the same harness sees wrong promotions.
    monkeypatch.setattr(step_histogram, "unknown_steps", lambda histograms: None)
    runs = _runs_at_threshold(seed=21, trials=100, steps=1, batch=64, report_steps=False)
    wrong_promotion = _rate(runs, Outcome.PROMOTED)
    print(f"step gate counting every request (1 step/s x 64): promoted {wrong_promotion:.3f}")
    assert wrong_promotion > MAX_WRONG


def test_without_the_step_count_the_simulation_never_promotes() -> None:
    """Hole 4 (issue 33): the same stages with `vllm:iteration_tokens_total` missing were
    judged on the raw count (the control above: wrong promotions); now no stage decides."""
    runs = _runs_at_threshold(seed=21, trials=100, steps=1, batch=64, report_steps=False)
    assert _rate(runs, Outcome.PROMOTED) == 0.0
    assert _rate(runs, Outcome.ROLLED_BACK) == 0.0


@pytest.mark.parametrize(
    ("candidate_steps", "baseline_steps", "sides"),
    [
        (None, None, "candidate and baseline"),
        (None, 100_000.0, "candidate"),
        (100_000.0, None, "baseline"),
    ],
)
def test_a_look_without_the_step_count_is_inconclusive_naming_the_series(
    candidate_steps: float | None, baseline_steps: float | None, sides: str
) -> None:
    """Hole 4: the pair that passes with its step count (the test above) passed with it
    missing too, every request counted as a step; now Inconclusive, naming what is missing."""
    baseline, candidate = _tail_pair(None)
    found = _measure(
        dataclasses.replace(baseline, steps=baseline_steps),
        dataclasses.replace(candidate, steps=candidate_steps),
    )
    assert found.verdict is GateVerdict.INCONCLUSIVE
    assert found.reason.startswith(
        f"server step P99 ITL: vllm:iteration_tokens_total_count has no series for the {sides} "
        "engine over the window"
    )
    assert "not judged on the raw count" in found.reason
    assert found.lower_bound is None and found.upper_bound is None


def _interpolated(h: StepHistogram, q: float, error: float) -> Interval | None:
    """The naive bound: the same ranks, placed by Prometheus's interpolation, not the edges."""
    n = round(h.total)
    ranks = quantile_rank_bounds(n, q, error)
    value = histogram_quantile(h, q)
    if ranks is None or value is None:
        return None
    low, high = histogram_quantile(h, ranks[0] / n), histogram_quantile(h, ranks[1] / n)
    assert low is not None and high is not None
    return Interval(value, low, high, n)


def test_the_simulation_catches_an_interpolating_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    # Interpolating inside buckets (and spending the whole error on every look) trusts a
    # uniform spread the tail does not have: the same harness sees many wrong verdicts.
    monkeypatch.setattr(step_histogram, "quantile_bucket_interval", _interpolated)
    monkeypatch.setattr(
        gate_boundary, "look_error", lambda gate, previous, plan: 1 - gate.confidence
    )
    runs = _runs_at_threshold(seed=22, trials=30, steps=48, batch=1)
    wrong = _rate(runs, Outcome.PROMOTED) + _rate(runs, Outcome.ROLLED_BACK)
    print(f"interpolating step gate at the threshold: wrong verdicts {wrong:.3f}")
    assert wrong > 3 * MAX_WRONG
