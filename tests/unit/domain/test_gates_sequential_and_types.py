"""The gate registry, the sequential error spending, the cluster-robust estimators, the
look history in status, and which gates a rollout's method and traffic judge."""

from __future__ import annotations

import dataclasses
import math
import random
from statistics import NormalDist

import pytest
from domain_fixtures import T0, acceptance, stage_obs
from gate_looks import evaluate_gate, look_error

from specdecode.api import GateSpec, GateType, GateVerdict
from specdecode.api.analysis import default_stages
from specdecode.api.certify import StageContext, certify
from specdecode.api.speculative import SpeculativeMethod
from specdecode.api.status import MAX_LOOKS_KEPT
from specdecode.api.traffic import TrafficSourceType
from specdecode.domain.clustered import block_quantile, ratio_of_sums
from specdecode.domain.gates import MIN_LOOK_ERROR, LookPlan
from specdecode.domain.gates.registry import registered_types
from specdecode.domain.observations import (
    AcceptanceCounts,
    AcceptedMoments,
    LatencyBlock,
    LatencySamples,
    StageObservations,
)
from specdecode.domain.sequential import critical_values, spent
from specdecode.domain.sketch import Sketch
from specdecode.domain.stage_state import GateRecord

pytestmark = pytest.mark.unit
MIRROR = LookPlan(300, 600, mirror=True)

STAGE_LOOKS = tuple((1 + 15 * i) / 600 for i in range(40))  # a default stage's looks


def test_every_gate_type_has_a_registered_measure() -> None:
    assert registered_types() == frozenset(GateType)


def test_a_single_look_at_the_end_spends_everything_at_once() -> None:
    assert critical_values((1.0,), 0.05)[0] == pytest.approx(NormalDist().inv_cdf(0.95))


def test_the_boundary_crosses_with_the_spent_error_under_the_null() -> None:
    # A Brownian motion watched at a stage's 40 looks: the share that ever crosses is the
    # error spent by the last look (0.05), within Monte Carlo noise (sd 0.0035).
    critical = critical_values(STAGE_LOOKS, 0.05)
    rng, crossed, trials = random.Random(3), 0, 4000
    for _ in range(trials):
        walk, before = 0.0, 0.0
        for t, c in zip(STAGE_LOOKS, critical, strict=True):
            walk += rng.gauss(0.0, math.sqrt(t - before))
            before = t
            if walk / math.sqrt(t) >= c:
                crossed += 1
                break
    share = crossed / trials
    expected = spent(0.05, STAGE_LOOKS[-1])
    assert abs(share - expected) < 0.009


def test_the_boundary_is_tighter_than_a_bonferroni_split_after_the_first_looks() -> None:
    critical = critical_values(STAGE_LOOKS, 0.05)
    bonferroni = NormalDist().inv_cdf(1 - 0.05 / 42)
    assert critical[0] > bonferroni  # the first look, on 1 s of data, spends almost nothing
    assert all(c < bonferroni for c in critical[8:])
    assert critical[-1] < 2.1


def test_a_repeated_look_at_the_same_time_spends_nothing() -> None:
    assert math.isinf(critical_values((0.5, 0.5), 0.05)[1])


def test_ratio_of_sums_measures_the_clustering() -> None:
    # Two requests: (n, a) = (10, 10) and (10, 0): r = 0.5, residuals +5 and -5.
    moments = AcceptedMoments.of([(10, 10), (10, 0)])
    found = ratio_of_sums(
        moments.requests,
        moments.steps,
        moments.accepted,
        moments.steps_sq,
        moments.accepted_steps,
        moments.accepted_sq,
    )
    assert found is not None
    assert found.value == pytest.approx(0.5)
    assert found.se == pytest.approx(math.sqrt(2 / 1 * 50 / 400))


def _blocks(batch: int, rng: random.Random, blocks: int = 100) -> list[Sketch]:
    """Blocks of 64 steps, each step's latency recorded `batch` times."""
    made = []
    for _ in range(blocks):
        sketch = Sketch()
        for _ in range(64):
            sketch.add(rng.lognormvariate(-3.5, 0.4), batch)
        made.append(sketch)
    return made


def _union(blocks: list[Sketch]) -> Sketch:
    union = Sketch()
    for block in blocks:
        union.merge(block)
    return union


def test_shared_steps_widen_the_quantile_bound_by_their_batch() -> None:
    rng = random.Random(4)
    single, shared = _blocks(1, rng), _blocks(32, rng)
    one = block_quantile(single, _union(single), 0.99)
    many = block_quantile(shared, _union(shared), 0.99)
    assert one is not None and many is not None
    # The same number of steps: the tail share's spread is about the same in share units,
    # though the batch of 32 has 32x the samples (an i.i.d. bound would be ~5.7x narrower).
    assert many.share_sd > 0.6 * one.share_sd
    assert many.samples == 32 * one.samples


def _alpha_look(previous: object = None, seconds: float = 300) -> object:
    counts = acceptance(0.70, 20_000, requests=300)
    return evaluate_gate(
        GateSpec(name="alpha", type=GateType.ACCEPTANCE),
        stage_obs("s", counts),
        previous,  # type: ignore[arg-type]
        T0,
        LookPlan(seconds, 600),
    )


def test_each_look_is_kept_with_its_counts_and_error() -> None:
    first = _alpha_look(None, 16)
    second = _alpha_look(first, 31)
    assert second.look_count == 2  # type: ignore[attr-defined]
    looks = second.looks  # type: ignore[attr-defined]
    assert [look.measured_seconds for look in looks] == [16, 31]
    assert looks[1].samples == 60_000 and looks[1].verdict is GateVerdict.SUCCESSFUL
    assert 0 < looks[0].error < looks[1].error < 0.05


def test_the_history_is_bounded_and_a_lost_look_spends_only_its_increment() -> None:
    result = _alpha_look(None, 1)
    for i in range(1, MAX_LOOKS_KEPT + 5):
        result = _alpha_look(result, 1 + 5 * i)
    assert len(result.looks) == MAX_LOOKS_KEPT  # type: ignore[attr-defined]
    gate = GateSpec(name="alpha", type=GateType.ACCEPTANCE)
    plan = LookPlan(400, 600)
    expected = spent(0.05, 400 / 600) - spent(0.05, result.looks[-1].measured_seconds / 600)  # type: ignore[attr-defined]
    assert look_error(gate, result, plan) == pytest.approx(expected)  # type: ignore[arg-type]


def test_looks_taken_but_none_kept_leave_nothing_to_spend() -> None:
    """A status whose look history is gone (edited, or written by another tool) must not
    spend the budget from 0 again: the looks it counted may have spent all of it."""
    result = _alpha_look(_alpha_look(None, 16), 31)
    assert isinstance(result, GateRecord)
    emptied = result.model_copy(update={"looks": []})
    gate = GateSpec(name="alpha", type=GateType.ACCEPTANCE)
    plan = LookPlan(400, 600)
    assert look_error(gate, emptied, plan) == MIN_LOOK_ERROR
    assert look_error(gate, result, plan) > 1e-6  # the control: with its history it spends


_TAIL_STAGE = {"p99-itl", "tpot-speedup", "error-rate"}


@pytest.mark.parametrize(
    ("method", "first_stage"),
    [
        (SpeculativeMethod.EAGLE3, {"alpha", "error-rate"}),
        (SpeculativeMethod.SUFFIX, {"tokens-per-step", "error-rate"}),
        (SpeculativeMethod.NGRAM, {"tokens-per-step", "error-rate"}),
        (SpeculativeMethod.MEDUSA, {"p99-itl", "tpot-speedup", "error-rate"}),
        (SpeculativeMethod.NGRAM_GPU, {"p99-itl", "tpot-speedup", "error-rate"}),
        (SpeculativeMethod.DFLASH, {"p99-itl", "tpot-speedup", "error-rate"}),
    ],
)
def test_default_stages_judge_what_pays_for_each_method(
    method: SpeculativeMethod, first_stage: set[str]
) -> None:
    prompts = TrafficSourceType.PROMPTS
    judged = [
        {
            g.name
            for g in stage.gates
            if certify(g, StageContext(prompts, method, stage.concurrency)).judged
        }
        for stage in default_stages()
    ]
    assert judged == [first_stage, _TAIL_STAGE]


def test_speedup_is_reported_not_judged_under_mirror_traffic() -> None:
    gate = GateSpec(name="g", type=GateType.SPEEDUP)
    found = certify(gate, StageContext(TrafficSourceType.MIRROR))
    assert not found.judged and found.reason is not None and "Mirror" in found.reason


def test_error_rate_is_judged_under_mirror_traffic() -> None:
    gate = GateSpec(name="g", type=GateType.ERROR_RATE)
    assert certify(gate, StageContext(TrafficSourceType.MIRROR)).certifies


def _suffix_like(requests: int = 200, rng: random.Random | None = None) -> StageObservations:
    """Long variable proposals: alpha ~0.5, yet ~3 tokens per step."""
    rng = rng or random.Random(8)
    per_request = []
    for _ in range(requests):
        steps = rng.randint(40, 120)
        per_request.append((steps, sum(rng.choice((0, 1, 2, 3, 4, 6)) for _ in range(steps))))
    moments = AcceptedMoments.of(per_request)
    drafts = moments.steps
    counts = AcceptanceCounts(
        drafts=drafts,
        draft_tokens=2 * moments.accepted,  # alpha 0.5
        accepted_tokens=moments.accepted,
        requests=requests,
    )
    block = LatencyBlock(start=0.0, seconds=2.0, accepted=moments)
    return StageObservations(
        stage_name="s",
        candidate_acceptance=counts,
        candidate_latency=LatencySamples(blocks=(block,), shards=1),
    )


def test_accepted_length_passes_a_long_proposal_method_that_alpha_would_fail() -> None:
    seen = _suffix_like()
    plan = LookPlan(300, 600, method=SpeculativeMethod.SUFFIX)
    length = evaluate_gate(GateSpec(name="t", type=GateType.ACCEPTED_LENGTH), seen, None, T0, plan)
    # alpha 0.5 under the 0.55 threshold in circulation, yet 3.7 tokens per step
    strict = GateSpec(name="a", type=GateType.ACCEPTANCE, min_alpha=0.55)
    alpha = evaluate_gate(strict, seen, None, T0, plan)
    assert length.verdict is GateVerdict.SUCCESSFUL
    assert length.value == pytest.approx(1 + 8 / 3, rel=0.05)
    assert length.stream_value == pytest.approx(length.value)
    assert length.units == 200 and "200 requests" in length.reason
    assert alpha.verdict is GateVerdict.FAILED


def test_accepted_length_judges_every_step_not_only_the_drafting_ones() -> None:
    """vLLM counts a draft only when a lookup proposed something: a suffix run whose
    lookups mostly miss shows 4 tokens per drafting step in its counters, while the stream
    gets 1.2 per step. The gate judges the stream (the control, the counters, would pass)."""
    rng = random.Random(3)
    per_request = []
    for _ in range(120):
        steps = rng.randint(60, 120)
        # one step in 15 drafts and gets 3 accepted tokens; the rest propose nothing
        per_request.append((steps, sum(3 if rng.random() < 1 / 15 else 0 for _ in range(steps))))
    moments = AcceptedMoments.of(per_request)
    drafting_steps = moments.accepted / 3
    counts = AcceptanceCounts(
        drafts=drafting_steps,
        draft_tokens=8 * drafting_steps,
        accepted_tokens=moments.accepted,
        requests=120,
    )
    block = LatencyBlock(start=0.0, seconds=2.0, accepted=moments)
    seen = StageObservations(
        stage_name="s",
        candidate_acceptance=counts,
        candidate_latency=LatencySamples(blocks=(block,), shards=1),
    )
    plan = LookPlan(300, 600, method=SpeculativeMethod.SUFFIX)
    result = evaluate_gate(GateSpec(name="t", type=GateType.ACCEPTED_LENGTH), seen, None, T0, plan)
    assert result.mean_acceptance_length == pytest.approx(4.0)  # the counters: would pass
    assert result.value == pytest.approx(1.2, abs=0.03)
    assert result.verdict is GateVerdict.FAILED
    assert "counters say 4.00 tokens per drafting step" in result.reason


def test_acceptance_says_when_streamed_chunks_and_counters_disagree() -> None:
    seen = _suffix_like()
    counts = seen.candidate_acceptance
    assert isinstance(counts, AcceptanceCounts)
    low = StageObservations(
        stage_name="s",
        candidate_acceptance=AcceptanceCounts(
            drafts=counts.drafts,
            draft_tokens=counts.draft_tokens,
            accepted_tokens=0.7 * counts.accepted_tokens,  # the counters see less
            requests=counts.requests,
        ),
        candidate_latency=seen.candidate_latency,
    )
    gate = GateSpec(name="a", type=GateType.ACCEPTANCE, min_alpha=0.3)
    result = evaluate_gate(gate, low, None, T0, LookPlan(300, 600))
    assert result.value == pytest.approx(0.35)
    assert result.stream_value == pytest.approx(0.5)
    assert "disagree" in result.reason


@pytest.mark.parametrize("gate_type", [GateType.ACCEPTANCE, GateType.ACCEPTED_LENGTH])
def test_under_mirror_the_counters_bound_needs_the_request_lengths(gate_type: GateType) -> None:
    counts = acceptance(0.75, 20_000, requests=300)  # ~67 drafts per request

    def look(longest: float | None) -> GateRecord:
        seen = dataclasses.replace(counts, longest_request_tokens=longest)
        obs = stage_obs("s", seen, load_report=False)
        return evaluate_gate(GateSpec(name="a", type=gate_type), obs, None, T0, MIRROR)

    bounded = look(500.0)  # every request at most 500 tokens: 40 all-or-nothing requests
    assert bounded.verdict is GateVerdict.SUCCESSFUL, bounded.reason
    assert "all-or-nothing requests" in (bounded.reason or "")
    assert bounded.stream_value is None and bounded.units == 300
    # no histogram: no bound without assuming a correlation (the old rule assumed one)
    unbounded = look(None)
    assert unbounded.verdict is GateVerdict.INCONCLUSIVE
    assert "vllm:request_generation_tokens" in (unbounded.reason or "")


@pytest.mark.parametrize("gate_type", [GateType.ACCEPTANCE, GateType.ACCEPTED_LENGTH])
@pytest.mark.parametrize(
    ("candidate", "why"),
    [
        (None, "no load report"),
        (LatencySamples(shards=1, incomplete="load pod shadow-1 did not answer"), "did not"),
        (LatencySamples(shards=1), "per-request acceptance not measured"),
    ],
    ids=["missing", "incomplete", "no-moments"],
)
def test_without_load_data_acceptance_gates_are_inconclusive_never_a_weaker_rule(
    gate_type: GateType, candidate: LatencySamples | None, why: str
) -> None:
    """Issue 22: 2,000 drafts from 5 requests without a load report gave Successful (the
    counters-only bound with an assumed correlation and no minimum of requests)."""
    seen = stage_obs("s", acceptance(0.75, 20_000, requests=300), load_report=False)
    seen = dataclasses.replace(seen, candidate_latency=candidate)
    gate = GateSpec(name="a", type=gate_type)
    result = evaluate_gate(gate, seen, None, T0, LookPlan(300, 600))
    assert result.verdict is GateVerdict.INCONCLUSIVE, result.reason
    assert why in result.reason


@pytest.mark.parametrize("mirror", [False, True], ids=["prompts", "mirror"])
@pytest.mark.parametrize("gate_type", [GateType.ACCEPTANCE, GateType.ACCEPTED_LENGTH])
def test_fewer_requests_than_min_samples_is_inconclusive(gate_type: GateType, mirror: bool) -> None:
    """2,000 drafts (6,000 draft tokens, alpha 0.9) from 5 requests: a clear bound, too few
    requests to trust it (their correlation is what the bound rests on)."""
    counts = acceptance(0.9, 2_000, requests=5)
    # Mirror: with the request lengths' bound (without it the bound is not formed at all)
    counts = dataclasses.replace(counts, longest_request_tokens=2_000.0)
    seen = stage_obs("s", counts, load_report=not mirror)
    gate = GateSpec(name="a", type=gate_type, min_samples=30)
    result = evaluate_gate(gate, seen, None, T0, LookPlan(300, 600, mirror=mirror))
    assert result.verdict is GateVerdict.INCONCLUSIVE, result.reason
    assert result.units == 5 and "30" in result.reason


def test_a_median_of_tied_values_still_gets_a_finite_bound() -> None:
    """A plain engine's steps can be all alike, so every request of the baseline has the
    same TPOT: one bucket holds the whole median. The bound must still close (it did not
    while only buckets strictly above the quantile counted as its tail)."""
    rng = random.Random(5)
    tied = [Sketch.of([0.080] * 3) for _ in range(30)]
    spread = [
        Sketch.of([rng.lognormvariate(math.log(0.055), 0.2) for _ in range(3)]) for _ in range(30)
    ]
    merged_tied, merged_spread = Sketch(), Sketch()
    for block in tied:
        merged_tied.merge(block)
    for block in spread:
        merged_spread.merge(block)
    baseline = block_quantile(tied, merged_tied, 0.5)
    candidate = block_quantile(spread, merged_spread, 0.5)
    assert baseline is not None and candidate is not None
    assert baseline.tail_clusters == 0  # no weight strictly above the tied median
    low, high = baseline.log_bounds(2.0)
    assert math.isfinite(low) and math.isfinite(high)
    assert math.exp(low) <= 0.080 <= math.exp(high) and math.exp(high) / math.exp(low) < 1.05
    plan = LookPlan(300, 600)
    seen = StageObservations(
        stage_name="s",
        baseline_latency=LatencySamples(
            blocks=tuple(_tpot_block(i, b) for i, b in enumerate(tied)), shards=1
        ),
        candidate_latency=LatencySamples(
            blocks=tuple(_tpot_block(i, b) for i, b in enumerate(spread)), shards=1
        ),
    )
    result = evaluate_gate(GateSpec(name="s", type=GateType.SPEEDUP), seen, None, T0, plan)
    assert result.verdict is GateVerdict.SUCCESSFUL, result.reason
    assert result.value == pytest.approx(0.080 / 0.055, rel=0.15)


def _tpot_block(index: int, tpot: Sketch) -> LatencyBlock:
    return LatencyBlock(start=2.0 * index, seconds=2.0, time_per_output_token=tpot)
