"""Confidence bounds and single-look gate verdicts."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
from domain_fixtures import T0, acceptance, blocked_samples, stage_obs
from gate_looks import evaluate_gate

from specdecode.api import GateSpec, GateType, GateVerdict, ItlDefinition
from specdecode.domain.acceptance_bound import acceptance_interval
from specdecode.domain.gates import LookPlan
from specdecode.domain.observations import (
    AcceptanceCounts,
    LatencySamples,
    MetricError,
    ServerStepHistograms,
    StageObservations,
    StepHistogram,
)
from specdecode.domain.stats import (
    min_samples_for_quantile,
    quantile_rank_bounds,
    wilson_interval,
)

pytestmark = pytest.mark.unit

ALPHA = GateSpec(name="alpha", type=GateType.ACCEPTANCE, min_alpha=0.55)
LOOK = LookPlan(measured_seconds=300, max_seconds=600)  # a first look half-way
P99 = GateSpec(
    name="p99", type=GateType.TAIL_LATENCY, tolerance=0.10, itl_definition=ItlDefinition.PER_TOKEN
)


def test_the_counters_bound_needs_the_longest_request_and_no_correlation() -> None:
    # 90,000 drafts: from requests of at most 3,000 tokens they are worth at least 30
    # all-or-nothing requests; of at most 10 tokens, 9,000.
    long = acceptance_interval(90_000, 270_000, 162_000, 3_000, 0.01)
    short = acceptance_interval(90_000, 270_000, 162_000, 10, 0.01)
    assert long is not None and short is not None
    assert long.upper - long.lower > 0.3
    assert short.upper - short.lower < 0.04
    assert long.value == short.value == pytest.approx(0.6)
    # the same as a proportion over D / d_max trials
    expected = wilson_interval(18, 30, 0.01)
    assert expected is not None and long.lower == pytest.approx(expected.lower)
    # no length bound (the histogram missing, or a request past its last edge): no bound
    assert acceptance_interval(90_000, 270_000, 162_000, None, 0.01) is None


def test_no_drafts_is_no_data_never_alpha_zero() -> None:
    assert acceptance_interval(0, 0, 0, 100, 0.05) is None
    empty = AcceptanceCounts(drafts=0, draft_tokens=0, accepted_tokens=0)
    result = evaluate_gate(ALPHA, stage_obs("s", empty), None, T0, LOOK)
    assert result.verdict is GateVerdict.INCONCLUSIVE
    assert result.value is None
    assert "no drafts" in result.reason


def test_too_few_draft_tokens_is_inconclusive_even_if_the_bound_clears() -> None:
    few = acceptance(0.95, drafts=100)
    result = evaluate_gate(ALPHA, stage_obs("s", few), None, T0, LOOK)
    assert result.verdict is GateVerdict.INCONCLUSIVE
    assert "needs 1000 draft tokens" in result.reason


def test_acceptance_verdicts_with_numbers() -> None:
    good = evaluate_gate(
        ALPHA, stage_obs("s", acceptance(0.75, 20_000, requests=400)), None, T0, LOOK
    )
    bad = evaluate_gate(
        ALPHA, stage_obs("s", acceptance(0.40, 20_000, requests=400)), None, T0, LOOK
    )
    close = evaluate_gate(
        ALPHA, stage_obs("s", acceptance(0.56, 20_000, requests=400)), None, T0, LOOK
    )
    assert good.verdict is GateVerdict.SUCCESSFUL
    assert good.lower_bound is not None and good.lower_bound >= 0.55
    assert good.threshold == 0.55 and good.samples == 60_000
    assert bad.verdict is GateVerdict.FAILED and bad.failures == 1
    assert close.verdict is GateVerdict.INCONCLUSIVE and close.inconclusives == 1
    assert "0.750" in good.reason and ">= 0.55" in good.reason


def test_acceptance_reports_mean_length_and_per_position_shares() -> None:
    """vLLM's per-position counter i counts drafts with at least i+1 tokens accepted."""
    counts = AcceptanceCounts(
        drafts=1000,
        draft_tokens=3000,
        accepted_tokens=1800,
        per_position_accepted=(800, 600, 400),
        requests=50,
    )
    result = evaluate_gate(ALPHA, stage_obs("s", counts), None, T0, LOOK)
    assert result.mean_acceptance_length == pytest.approx(2.8)
    assert result.acceptance_per_position == pytest.approx([0.8, 0.6, 0.4])
    assert result.value == pytest.approx(0.6)


def test_metric_error_is_error_and_counts_in_a_row() -> None:
    down = stage_obs("s", MetricError("prometheus", "503"))
    first = evaluate_gate(ALPHA, down, None, T0, LOOK)
    second = evaluate_gate(ALPHA, down, first, T0, LOOK)
    assert (second.verdict, second.consecutive_errors) == (GateVerdict.ERROR, 2)
    recovered = evaluate_gate(ALPHA, stage_obs("s", acceptance(0.7, 500)), second, T0, LOOK)
    assert recovered.consecutive_errors == 0


@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_quantile_bounds_cover_at_their_level(q: float) -> None:
    rng = random.Random(5)
    error, trials, n = 0.05, 2000, 400
    lower_rank, upper_rank = quantile_rank_bounds(n, q, error) or (0, 0)
    true_quantile = q  # uniform(0, 1)
    misses_low = misses_high = 0
    for _ in range(trials):
        ordered = sorted(rng.random() for _ in range(n))
        misses_low += ordered[lower_rank - 1] > true_quantile
        misses_high += ordered[upper_rank - 1] < true_quantile
    assert misses_low / trials <= error + 0.015
    assert misses_high / trials <= error + 0.015


def test_quantile_bounds_need_enough_samples() -> None:
    needed = min_samples_for_quantile(0.99, 0.001)
    assert needed == math.ceil(math.log(0.001) / math.log(0.99))
    assert quantile_rank_bounds(needed - 1, 0.99, 0.001) is None
    assert quantile_rank_bounds(needed, 0.99, 0.001) is not None


def _itl(scale: float, n: int, seed: int, blocks: int = 60) -> LatencySamples:
    """Per-token ITL of n tokens, and a third as many chunk gaps three times as long."""
    rng = random.Random(seed)
    token = tuple(scale * rng.lognormvariate(-3.5, 0.3) for _ in range(n))
    samples = blocked_samples(token, blocks)
    chunks = blocked_samples(tuple(3 * x for x in token[: n // 3]), blocks)
    return LatencySamples(
        blocks=tuple(
            dataclasses.replace(b, per_chunk_itl=c.per_chunk_itl)
            for b, c in zip(samples.blocks, chunks.blocks, strict=True)
        ),
        window_seconds=samples.window_seconds,
        shards=1,
    )


def test_tail_latency_verdicts() -> None:
    base = _itl(1.0, 30_000, 1)
    assert (
        evaluate_gate(
            P99, stage_obs("s", baseline=base, candidate=_itl(0.9, 30_000, 2)), None, T0, LOOK
        ).verdict
        is GateVerdict.SUCCESSFUL
    )
    failed = evaluate_gate(
        P99, stage_obs("s", baseline=base, candidate=_itl(1.4, 30_000, 3)), None, T0, LOOK
    )
    assert failed.verdict is GateVerdict.FAILED
    assert failed.lower_bound is not None and failed.lower_bound > 1.1
    assert failed.baseline_value is not None and failed.candidate_value is not None
    assert "P99 PerToken ITL ratio" in failed.reason and "ms" in failed.reason
    assert failed.units == 60 and "60 / 60 blocks" in failed.reason


def test_tail_latency_too_few_samples_says_how_many() -> None:
    # 10 blocks of a 20-block minimum; then enough blocks but too few holding tail samples.
    small = stage_obs("s", baseline=_itl(1.0, 200, 1, 10), candidate=_itl(2.0, 200, 2, 10))
    result = evaluate_gate(P99, small, None, T0, LOOK)
    assert result.verdict is GateVerdict.INCONCLUSIVE
    assert "10 / 10 blocks" in result.reason and "20 blocks per side" in result.reason
    thin = stage_obs("s", baseline=_itl(1.0, 400, 1, 40), candidate=_itl(2.0, 400, 2, 40))
    result = evaluate_gate(P99, thin, None, T0, LOOK)
    assert result.verdict is GateVerdict.INCONCLUSIVE
    assert "4 blocks with tail samples" in result.reason
    assert "30 with tail samples needed" in result.reason


def test_per_chunk_definition_uses_chunk_gaps() -> None:
    gate = GateSpec(name="p99", type=GateType.TAIL_LATENCY, itl_definition=ItlDefinition.PER_CHUNK)
    obs = stage_obs("s", baseline=_itl(1.0, 30_000, 1), candidate=_itl(1.0, 30_000, 1))
    result = evaluate_gate(gate, obs, None, T0, LOOK)
    assert result.itl_definition is ItlDefinition.PER_CHUNK
    assert result.samples == 10_000


def test_speedup_gate() -> None:
    gate = GateSpec(name="speedup", type=GateType.SPEEDUP, min_speedup=1.2)
    rng = random.Random(3)
    base = blocked_samples(time_per_output_token=tuple(rng.gauss(0.03, 0.003) for _ in range(2000)))
    fast = blocked_samples(time_per_output_token=tuple(rng.gauss(0.02, 0.002) for _ in range(2000)))
    result = evaluate_gate(gate, stage_obs("s", baseline=base, candidate=fast), None, T0, LOOK)
    assert result.verdict is GateVerdict.SUCCESSFUL
    assert result.value == pytest.approx(1.5, rel=0.05)
    same = evaluate_gate(gate, stage_obs("s", baseline=base, candidate=base), None, T0, LOOK)
    assert same.verdict is GateVerdict.FAILED


def test_wilson_interval() -> None:
    interval = wilson_interval(0, 100, 0.05)
    assert interval is not None
    assert interval.lower == 0.0
    assert 0.02 < interval.upper < 0.04
    assert wilson_interval(0, 0, 0.05) is None


def test_tail_latency_reports_vllms_step_histogram_as_a_cross_check_only() -> None:
    bounds = (0.01, 0.025, 0.05, 0.075, math.inf)
    server = ServerStepHistograms(
        baseline=StepHistogram(bounds, (0.0, 1000.0, 1000.0, 1000.0, 1000.0)),
        candidate=StepHistogram(bounds, (0.0, 0.0, 1000.0, 1000.0, 1000.0)),
    )
    observations = StageObservations(stage_name="s", server_step_itl=server)
    result = evaluate_gate(P99, observations, None, T0, LOOK)
    assert result.server_baseline_value == pytest.approx(0.01 + 0.015 * 0.99)
    assert result.server_candidate_value == pytest.approx(0.025 + 0.025 * 0.99)
    assert result.verdict is GateVerdict.INCONCLUSIVE  # a client-side gate: no client samples
    p90 = GateSpec(name="p90", type=GateType.TAIL_LATENCY, quantile=0.9)
    at_p90 = evaluate_gate(p90, observations, None, T0, LOOK)
    assert at_p90.server_baseline_value == pytest.approx(0.01 + 0.015 * 0.9)
    failed = StageObservations(stage_name="s", server_step_itl=MetricError("prom", "down"))
    assert evaluate_gate(P99, failed, None, T0, LOOK).server_baseline_value is None
