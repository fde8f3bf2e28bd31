"""No drafts is a finding (issue 33, hole 8): a candidate whose spec-decode counters are
scraped at zero over the gate's minimum of completed requests is Failed, for every
acceptance-type gate; absent counters, a failed read, thin or missing load data, plain
decoding and a schedule that turns speculation off stay Inconclusive (or Error).

Each Failed case here was Inconclusive ("no drafts yet") before the change.
"""

from __future__ import annotations

import pytest
from domain_fixtures import EAGLE3, T0, latency_stage, make_spec
from gate_looks import evaluate_gate

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import GateSpec, GateType, GateVerdict
from specdecode.domain.analyzing import look_plan
from specdecode.domain.gates import LookPlan
from specdecode.domain.observations import (
    AcceptanceCounts,
    AcceptedMoments,
    LatencyBlock,
    LatencySamples,
    MetricError,
    StageObservations,
)
from specdecode.domain.stage_state import GateRecord
from specdecode.reconciler.rollout_boundary import settings_of

pytestmark = pytest.mark.unit

ACCEPTANCE_TYPES = [GateType.ACCEPTANCE, GateType.ACCEPTED_LENGTH]
NGRAM_LOOK = LookPlan(240, 600, method="ngram")
# What the real-vLLM lane's n-gram candidate showed: counters present, nothing drafted.
SCRAPED_ZERO = AcceptanceCounts(0.0, 0.0, 0.0, requests=252.0, drafts_scraped=True)
NEVER_SPECULATES = "this config never speculates on this traffic"


def plain_requests(requests: int, steps: float = 40.0) -> LatencySamples:
    """The load pods' report of `requests` finished requests, one token per chunk each."""
    moments = AcceptedMoments.of([(steps, 0.0)] * requests)
    block = LatencyBlock(start=0.0, seconds=2.0, accepted=moments, requests_ok=requests)
    return LatencySamples(blocks=(block,), window_seconds=240.0, shards=1)


def look(
    gate_type: GateType,
    counts: AcceptanceCounts | MetricError | None,
    candidate: LatencySamples | MetricError | None,
    plan: LookPlan = NGRAM_LOOK,
    min_samples: int | None = None,
) -> GateRecord:
    seen = StageObservations("s", candidate_acceptance=counts, candidate_latency=candidate)
    gate = GateSpec(name="g", type=gate_type, min_samples=min_samples)
    return evaluate_gate(gate, seen, None, T0, plan)


@pytest.mark.parametrize("gate_type", ACCEPTANCE_TYPES)
def test_zero_drafts_over_enough_completed_requests_is_failed(gate_type: GateType) -> None:
    result = look(gate_type, SCRAPED_ZERO, plain_requests(252))
    assert result.verdict is GateVerdict.FAILED, result.reason
    assert result.reason.startswith(f"no drafts over 252 completed requests: {NEVER_SPECULATES}")
    assert result.units == 252 and result.failures == 1


@pytest.mark.parametrize("gate_type", ACCEPTANCE_TYPES)
def test_the_count_is_the_load_pods_not_the_engines(gate_type: GateType) -> None:
    """The engine says 252 (aborted requests included, extrapolated); the instrument saw 29
    finish: under Prompts traffic the gate counts what the instrument saw."""
    result = look(gate_type, SCRAPED_ZERO, plain_requests(29))
    assert result.verdict is GateVerdict.INCONCLUSIVE
    assert result.reason.startswith("no drafts over 29 completed requests: ")
    assert "30 completed requests without a draft needed" in result.reason


@pytest.mark.parametrize("gate_type", ACCEPTANCE_TYPES)
def test_the_request_minimum_is_the_gates_own(gate_type: GateType) -> None:
    assert look(gate_type, SCRAPED_ZERO, plain_requests(40)).verdict is GateVerdict.FAILED
    strict = look(gate_type, SCRAPED_ZERO, plain_requests(40), min_samples=100)
    assert strict.verdict is GateVerdict.INCONCLUSIVE
    assert "100 completed requests without a draft needed" in strict.reason


@pytest.mark.parametrize("gate_type", ACCEPTANCE_TYPES)
def test_absent_counters_are_unknown_never_a_finding(gate_type: GateType) -> None:
    absent = AcceptanceCounts(0.0, 0.0, 0.0, requests=252.0)  # no series: drafts_scraped False
    result = look(gate_type, absent, plain_requests(252))
    assert result.verdict is GateVerdict.INCONCLUSIVE
    assert "vllm:spec_decode_num_drafts_total" in result.reason
    assert "unknown, not zero" in result.reason
    unread = look(gate_type, None, plain_requests(252))
    assert unread.verdict is GateVerdict.INCONCLUSIVE and "no drafts yet" in unread.reason


@pytest.mark.parametrize("gate_type", ACCEPTANCE_TYPES)
def test_failed_reads_are_errors(gate_type: GateType) -> None:
    down = MetricError("prometheus", "timeout")
    assert look(gate_type, down, plain_requests(252)).verdict is GateVerdict.ERROR
    assert look(gate_type, SCRAPED_ZERO, down).verdict is GateVerdict.ERROR


@pytest.mark.parametrize("gate_type", ACCEPTANCE_TYPES)
@pytest.mark.parametrize(
    ("candidate", "why"),
    [
        (None, "no load report yet"),
        (LatencySamples(shards=1, incomplete="load pod shadow-1 did not answer"), "did not"),
    ],
    ids=["missing", "incomplete"],
)
def test_load_data_the_bound_could_not_rest_on_is_no_finding(
    gate_type: GateType, candidate: LatencySamples | None, why: str
) -> None:
    result = look(gate_type, SCRAPED_ZERO, candidate)
    assert result.verdict is GateVerdict.INCONCLUSIVE
    assert result.reason.startswith("no drafts yet: ") and why in result.reason


@pytest.mark.parametrize("gate_type", ACCEPTANCE_TYPES)
def test_under_mirror_the_engines_count_of_completed_requests_decides(
    gate_type: GateType,
) -> None:
    mirror = LookPlan(240, 600, method="ngram", mirror=True)
    assert look(gate_type, SCRAPED_ZERO, None, mirror).verdict is GateVerdict.FAILED
    few = AcceptanceCounts(0.0, 0.0, 0.0, requests=12.0, drafts_scraped=True)
    thin = look(gate_type, few, None, mirror)
    assert thin.verdict is GateVerdict.INCONCLUSIVE
    assert thin.reason.startswith("no drafts over 12 completed requests")


@pytest.mark.parametrize("gate_type", ACCEPTANCE_TYPES)
def test_no_drafts_by_design_is_no_finding(gate_type: GateType) -> None:
    """Plain decoding drafts nothing; nor does a schedule whose k is 0 at the stage's load."""
    plain = look(gate_type, SCRAPED_ZERO, plain_requests(252), LookPlan(240, 600, method=None))
    assert plain.verdict is GateVerdict.INCONCLUSIVE and "plain decoding" in plain.reason
    off = LookPlan(240, 600, method="eagle3", may_not_draft=True)
    scheduled = look(gate_type, SCRAPED_ZERO, plain_requests(252), off)
    assert scheduled.verdict is GateVerdict.INCONCLUSIVE
    assert "may turn speculation off" in scheduled.reason


def test_a_schedule_may_not_draft_where_it_gives_k_zero_at_the_stages_load() -> None:
    """k = 0 at the stage's concurrency (though k > 0 below it), or anywhere for a
    requestRate stage, makes zero drafts the schedule's doing; k > 0 there does not."""
    schedule = [[1, 4, 3], [5, 64, 0]]
    config = EAGLE3.model_copy(update={"num_speculative_tokens_per_batch_size": schedule})
    at = {
        (stage, concurrency): look_plan(
            settings_of(make_spec(stages=[latency_stage(concurrency=concurrency)])),
            0,
            0.0,
            setting_of(config),
        ).may_not_draft
        for stage, concurrency in (("low", 4), ("high", 32))
    }
    assert at == {("low", 4): False, ("high", 32): True}
    assert not look_plan(
        settings_of(make_spec(stages=[latency_stage()])), 0, 0.0, setting_of(EAGLE3)
    ).may_not_draft
