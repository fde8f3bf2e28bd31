"""A latency rollback after a lower-concurrency pass (issue 22, build 4): the verdict says
where the config paid and where it breaks even, and on vLLM >= 0.24 offers the candidate
with a per-batch-size schedule that speculates only up to the concurrency that passed;
`analysis.scheduleFallback: Analyze` analyses that offer at once, and it is promoted only on
its own evidence. The stages' data: stage 0 passes its alpha gate at concurrency 4, stage 1
(concurrency 32) sees the candidate's P99 chunk gap at about 2x the baseline's.
"""

from __future__ import annotations

import random
from dataclasses import asdict
from typing import Any

import pytest
from domain_fixtures import (
    EAGLE3,
    acceptance,
    analyzing,
    blocked_samples,
    make_spec,
    run,
    shadows_ready,
    stage_obs,
    streamed,
)

from specdecode.adapters.gate_boundary import stage_context
from specdecode.adapters.speculative_boundary import config_of, setting_of
from specdecode.api import EngineSpec, GateSpec, GateType, Phase, StagePhase
from specdecode.api.analysis import ScheduleFallback, default_stages
from specdecode.api.certify import certify
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.speculative import fingerprint_of
from specdecode.api.status import GateVerdict
from specdecode.api.traffic import TrafficSourceType
from specdecode.domain.analyzing import offered_config
from specdecode.domain.concurrency_verdict import (
    LowerPass,
    StageOutcome,
    lower_pass,
    lower_pass_text,
    schedule_offer,
)
from specdecode.domain.observations import LatencySamples, Observations
from specdecode.domain.rollout_settings import schedule_key
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.speculative_setting import SpeculativeSetting
from specdecode.domain.stage_state import GateRecord, StageRun
from specdecode.reconciler.analysis_boundary import plan_of
from specdecode.reconciler.rollout_boundary import settings_of
from specdecode.speculative_document import RunnableConfig

pytestmark = pytest.mark.unit

SCHEDULED_RELEASE = "vllm/vllm-openai:v0.24.0"  # the first with the schedule
GOOD = acceptance(0.45, drafts=20_000, requests=300)


def _latencies(scale: float, n: int, seed: int, tpot: float | None = None) -> LatencySamples:
    """Chunk gaps at `scale` (and 600 requests' time per output token near `tpot`)."""
    rng = random.Random(seed)
    itl = tuple(scale * rng.lognormvariate(-3.5, 0.3) for _ in range(n))
    per_request = () if tpot is None else tuple(tpot * rng.uniform(0.9, 1.1) for _ in range(600))
    # 5000 clean requests: enough for the ErrorRate gate to pass
    return blocked_samples(itl, time_per_output_token=per_request, requests_ok=5000)


def _spec(image: str = "vllm/vllm-openai:v0.11.2", **analysis: Any) -> SpecDecodeRolloutSpec:
    spec = make_spec(stages=default_stages(), **analysis)
    return spec.model_copy(update={"engine": EngineSpec(image=image)})


def _stage0(candidate_config: RunnableConfig | None) -> Observations:
    timed = _latencies(1.0, 20_000, 2)  # with the requests' accepted lengths streamed
    candidate = LatencySamples(
        blocks=timed.blocks + streamed(GOOD).blocks,
        window_seconds=timed.window_seconds,
        shards=1,
    )
    baseline = _latencies(1.0, 20_000, 1)
    observed = stage_obs("acceptance", GOOD, baseline=baseline, candidate=candidate)
    return shadows_ready(candidate=candidate_config, stage=observed)


def _stalled(candidate_config: RunnableConfig | None) -> Observations:
    observed = stage_obs(
        "tail-latency", baseline=_latencies(1.0, 20_000, 3), candidate=_latencies(2.0, 20_000, 4)
    )
    return shadows_ready(candidate=candidate_config, stage=observed)


def _to_the_tail_failure(
    spec: SpecDecodeRolloutSpec, status: RolloutState, start: float = 0
) -> RolloutState:
    """Stage 0 passes on its looks, then stage 1's first look fails the tail."""
    candidate = status.candidate_speculative
    for seconds in (31, 46, 61, 76, 91):
        status = run(spec, status, _stage0(candidate), start + seconds).status
    assert status.stages[0].phase is StagePhase.SUCCESSFUL, status.stages[0]
    return run(spec, status, _stalled(candidate), start + 122).status


def test_a_tail_rollback_after_a_passed_lower_concurrency_stage_says_where_it_breaks_even() -> None:
    status = _to_the_tail_failure(_spec(), analyzing(_spec()))
    assert status.phase is Phase.ROLLED_BACK and status.reason == "GateFailed"
    assert status.message.startswith("tail-latency/p99-itl: P99 PerChunk ITL ratio 1.99")
    # the default recipe's first stage judges no latency for EAGLE-3: no break-even is placed
    assert status.message.endswith(
        "; it passed stage acceptance at concurrency 4, which did not judge the tail, and fails "
        "the tail at concurrency 32 (break-even not measured: at or below 32)"
    ), status.message
    assert status.schedule_offer is None  # 0.11.2 has no per-batch-size schedule


def test_the_break_even_is_placed_only_where_the_lower_stage_passed_that_latency_gate() -> None:
    """A real-engine demo's draft 8x its target's depth passed an acceptance-only stage at 4
    and failed the speedup at 8; the verdict said "break-even above 4" where one stream
    measured 0.58x. Only a lower stage that passed the failing gate's type places it."""
    spec = _spec()
    stages = [
        stage.model_copy(update={"phase": StagePhase.SUCCESSFUL})
        for stage in analyzing(spec).stages
    ]
    judged = GateRecord(name="p99-itl", type=GateType.TAIL_LATENCY, verdict=GateVerdict.SUCCESSFUL)
    alpha_only = GateRecord(name="alpha", type=GateType.ACCEPTANCE, verdict=GateVerdict.SUCCESSFUL)
    tail = [GateType.TAIL_LATENCY]
    with_tail = [stages[0].model_copy(update={"gates": [alpha_only, judged]}), stages[1]]
    plan = plan_of(spec)
    found = lower_pass(plan, _outcomes(with_tail), 1, tail)
    assert found == LowerPass("acceptance", 4, 32, "the tail", judged_there=True)
    assert lower_pass_text(found).endswith("(break-even above 4, at or below 32)")
    without = [stages[0].model_copy(update={"gates": [alpha_only]}), stages[1]]
    found = lower_pass(plan, _outcomes(without), 1, tail)
    assert found == LowerPass("acceptance", 4, 32, "the tail", judged_there=False)
    assert "break-even above" not in lower_pass_text(found)
    # the speedup failing where only the tail passed lower down: not placed either
    speedup = [GateType.SPEEDUP]
    assert lower_pass(plan, _outcomes(with_tail), 1, speedup).judged_there is False  # type: ignore[union-attr]


def test_on_a_release_with_the_schedule_the_rollback_offers_it() -> None:
    spec = _spec(SCHEDULED_RELEASE)
    status = _to_the_tail_failure(spec, analyzing(spec))
    assert status.phase is Phase.ROLLED_BACK and status.reason == "GateFailed"
    offer = status.schedule_offer
    assert offer is not None
    assert offer.schedule == [[1, 4, 3], [5, 4096, 0]]
    back = config_of(offer)
    assert back is not None
    assert back.model_copy(update={"num_speculative_tokens_per_batch_size": None}) == EAGLE3
    assert "offered: num_speculative_tokens_per_batch_size [[1, 4, 3], [5, 4096, 0]]" in (
        status.message
    )
    assert "set status.scheduleOffer as spec.speculative" in status.message


def test_the_offer_stops_at_max_num_seqs_and_is_not_made_when_nothing_is_above_the_pass() -> None:
    limited = _spec(SCHEDULED_RELEASE)
    model = limited.model.model_copy(update={"extra_args": ["--max-num-seqs=64"]})
    at_64 = limited.model_copy(update={"model": model})  # from the start: extraArgs is evidence
    status = _to_the_tail_failure(at_64, analyzing(at_64))
    assert status.schedule_offer is not None
    assert status.schedule_offer.schedule == [[1, 4, 3], [5, 64, 0]]
    model = limited.model.model_copy(update={"extra_args": ["--max-num-seqs", "4"]})
    capped = limited.model_copy(update={"model": model})
    assert _to_the_tail_failure(capped, analyzing(capped)).schedule_offer is None


def _offer_at_the_tail(
    spec: SpecDecodeRolloutSpec,
    analysing: RolloutState,
    offer: SpeculativeSetting,
    candidate_tpot: float,
) -> RolloutState:
    """The offer's analysis through stage 0 (passed) and six looks at stage 1, where its tail
    holds and its time per output token is `candidate_tpot` against the baseline's 0.05."""
    status = analysing
    for seconds in (231, 246, 261, 276, 291):
        status = run(spec, status, _stage0(offer), seconds).status
    held = stage_obs(
        "tail-latency",
        baseline=_latencies(1.0, 20_000, 3, tpot=0.05),
        candidate=_latencies(1.0, 20_000, 5, tpot=candidate_tpot),
    )
    for seconds in (322, 337, 352, 367, 382, 397):
        status = run(spec, status, shadows_ready(candidate=offer, stage=held), seconds).status
    return status


def test_an_offer_that_gains_nothing_where_it_is_judged_is_not_promoted() -> None:
    """Hole 6 for the offer: at concurrency 32 it still speculates at batches 1-4, so the
    speedup gate asking a gain is judged there, and TPOT equal to the baseline's leaves it
    undecided (fail closed), never promoted on the tail and errors alone."""
    spec = _spec(SCHEDULED_RELEASE, schedule_fallback=ScheduleFallback.ANALYZE)
    failed = _to_the_tail_failure(spec, analyzing(spec))
    offer = failed.schedule_offer
    assert offer is not None
    analysing = run(spec, failed, shadows_ready(candidate=offer), 200).status
    status = _offer_at_the_tail(spec, analysing, offer, candidate_tpot=0.05)
    assert status.phase is Phase.ANALYZING, status.message
    speedup = {gate.name: gate for gate in status.stages[1].gates}["tpot-speedup"]
    assert speedup.verdict is GateVerdict.INCONCLUSIVE, speedup.reason


def test_opted_in_the_offer_is_analysed_and_promoted_only_on_its_own_evidence() -> None:
    spec = _spec(SCHEDULED_RELEASE, schedule_fallback=ScheduleFallback.ANALYZE)
    failed = _to_the_tail_failure(spec, analyzing(spec))
    offer = failed.schedule_offer
    assert failed.phase is Phase.DEPLOYING and failed.reason == "ScheduleAnalysisStarted"
    assert offer is not None and failed.candidate_speculative == offer
    assert failed.candidate_fingerprint == fingerprint_of(offer)
    assert failed.analysed_for == fingerprint_of(EAGLE3)
    assert all(stage.phase is StagePhase.PENDING for stage in failed.stages)  # evidence anew
    assert "analysing it now" in failed.message
    # The spec did not change: the offer's analysis is not restarted as a new desired config.
    analysing = run(spec, failed, shadows_ready(candidate=offer), 200).status
    assert analysing.phase is Phase.ANALYZING and analysing.candidate_speculative == offer
    # The offer speculates at batches 1-4, which a closed loop of 32 passes through as it
    # drains and refills: stage 1 judges its speedup too, with its tail and errors.
    status = _offer_at_the_tail(spec, analysing, offer, candidate_tpot=0.04)
    assert status.phase is Phase.PROMOTING, status.message
    gates = {gate.name: gate for gate in status.stages[1].gates}
    assert gates["p99-itl"].verdict is GateVerdict.SUCCESSFUL
    assert gates["error-rate"].verdict is GateVerdict.SUCCESSFUL
    assert gates["tpot-speedup"].verdict is GateVerdict.SUCCESSFUL
    promoted = run(spec, status, shadows_ready(stable=offer, candidate=offer), 410)
    assert promoted.status.phase is Phase.PROMOTED, promoted.status.message
    assert promoted.status.stable_speculative == offer
    # Still about the desired config it came from: the next reconcile changes nothing.
    again = run(spec, promoted.status, shadows_ready(stable=offer, candidate=offer), 500)
    assert again.status.phase is Phase.PROMOTED and again.events == ()


def test_an_offer_that_fails_too_rolls_back_without_a_second_offer() -> None:
    spec = _spec(SCHEDULED_RELEASE, schedule_fallback=ScheduleFallback.ANALYZE)
    failed = _to_the_tail_failure(spec, analyzing(spec))
    analysing = run(spec, failed, shadows_ready(candidate=failed.schedule_offer), 200).status
    final = _to_the_tail_failure(spec, analysing, start=200)
    assert final.phase is Phase.ROLLED_BACK and final.reason == "GateFailed"
    assert "offered" not in final.message
    assert final.schedule_offer is None


def _outcomes(stages: list[StageRun]) -> list[StageOutcome]:
    """The stage runs as the verdict reads them (what `analyzing` hands it)."""
    return [
        StageOutcome(
            stage.phase,
            frozenset(g.type for g in stage.gates if g.verdict is GateVerdict.SUCCESSFUL),
        )
        for stage in stages
    ]


def test_only_latency_failures_after_a_passed_lower_stage_name_the_concurrencies() -> None:
    spec = make_spec(stages=default_stages())
    status = analyzing(spec)
    passed = status.stages[0].model_copy(update={"phase": StagePhase.SUCCESSFUL})
    stages = [passed, status.stages[1]]
    plan = plan_of(spec)

    def said(stages_now: Any, index: int, gate_type: GateType) -> str:
        return lower_pass_text(lower_pass(plan, _outcomes(stages_now), index, [gate_type]))

    assert "fails the speedup at concurrency 32" in said(stages, 1, GateType.SPEEDUP)
    assert said(stages, 1, GateType.ERROR_RATE) == ""
    # the first stage, or one after a stage that did not pass: nothing to compare with
    assert said(stages, 0, GateType.TAIL_LATENCY) == ""
    assert said(status.stages, 1, GateType.TAIL_LATENCY) == ""


def test_a_restart_of_the_same_spec_keeps_analysing_the_offer_and_the_spec_can_adopt_it() -> None:
    spec = _spec(SCHEDULED_RELEASE, schedule_fallback=ScheduleFallback.ANALYZE)
    failed = _to_the_tail_failure(spec, analyzing(spec))
    offer = failed.schedule_offer
    assert offer is not None
    # The stages renamed: a clean restart, of the offer still.
    renamed_stages = [
        stage.model_copy(update={"name": f"{stage.name}-2"}) for stage in spec.analysis.stages
    ]
    renamed = spec.model_copy(
        update={"analysis": spec.analysis.model_copy(update={"stages": renamed_stages})}
    )
    restarted = run(renamed, failed, shadows_ready(candidate=offer), 200).status
    assert [stage.name for stage in restarted.stages] == ["acceptance-2", "tail-latency-2"]
    assert restarted.candidate_speculative == offer and restarted.analysed_for is not None
    # The offer written into Git: adopted as the desired config, its analysis goes on.
    adopted = spec.model_copy(update={"speculative": config_of(offer)})
    decision = run(adopted, failed, shadows_ready(candidate=offer), 200)
    assert [event.reason for event in decision.events] == ["ShadowsReady"]  # no restart
    assert decision.status.analysed_for is None
    assert decision.status.candidate_speculative == offer


def test_no_offer_under_mirror_traffic_or_when_production_runs_it_already() -> None:
    found = LowerPass("acceptance", 4, 32, "the tail")
    spec = _spec(SCHEDULED_RELEASE)
    plan = plan_of(spec)
    entries = schedule_offer(plan, EAGLE3.num_speculative_tokens, False, found)
    offer = offered_config(setting_of(EAGLE3), entries, None)
    assert offer is not None
    assert offered_config(setting_of(EAGLE3), entries, offer.fingerprint()) is None
    mirror = spec.analysis.model_copy(
        update={
            "traffic": spec.analysis.traffic.model_copy(update={"source": TrafficSourceType.MIRROR})
        }
    )
    mirror_plan = plan_of(spec.model_copy(update={"analysis": mirror}))
    passed = _outcomes(
        [
            stage.model_copy(update={"phase": StagePhase.SUCCESSFUL})
            for stage in analyzing(spec).stages
        ]
    )
    assert lower_pass(mirror_plan, passed, 1, [GateType.TAIL_LATENCY]) is None
    assert lower_pass(plan, passed, 1, [GateType.TAIL_LATENCY]) == LowerPass(
        "acceptance",
        4,
        32,
        "the tail",
        judged_there=False,  # the stages here judged nothing
    )


def test_where_a_schedule_turns_speculation_off_only_a_gain_is_not_asked() -> None:
    """At k = 0 for every batch size up to the stage's concurrency a Speedup gate asking a
    gain (minSpeedup >= 1) is not judged; one asking that speculation off costs at most
    10 % (minSpeedup 0.9) is."""
    scheduled = EAGLE3.model_copy(
        update={"num_speculative_tokens_per_batch_size": [[1, 32, 0], [33, 4096, 3]]}
    )
    stage = stage_context(
        _spec(SCHEDULED_RELEASE), 1, setting_of(scheduled)
    )  # concurrency 32: k = 0
    gain = GateSpec(name="gain", type=GateType.SPEEDUP)
    no_loss = GateSpec(name="no-loss", type=GateType.SPEEDUP, min_speedup=0.9)
    skipped = certify(gain, stage)
    assert not skipped.judged and not skipped.certifies
    assert "turns speculation off at every batch size up to concurrency 32" in (
        skipped.reason or ""
    )
    assert certify(no_loss, stage).certifies
    assert certify(gain, stage_context(_spec(SCHEDULED_RELEASE), 1, setting_of(EAGLE3))).certifies


def test_the_decision_reads_the_kernels_answer_for_the_stored_candidate_only() -> None:
    """The boundary evaluates the kernel once, for the stored status' candidate: the
    domain's answers are the kernel's, by gate name, and a look asking about another
    candidate's schedule is an error rather than an answer for the wrong config."""
    scheduled = EAGLE3.model_copy(
        update={"num_speculative_tokens_per_batch_size": [[1, 32, 0], [33, 4096, 3]]}
    )
    spec = _spec(SCHEDULED_RELEASE)
    candidate = setting_of(scheduled)
    assert candidate is not None
    settings = settings_of(spec, candidate)
    context = stage_context(spec, 1, candidate)
    kernel = {gate.name: certify(gate, context) for gate in spec.analysis.stages[1].gates}
    answers = settings.certifications(1, schedule_key(candidate.schedule))
    assert {name: asdict(answer) for name, answer in answers.items()} == {
        name: asdict(answer) for name, answer in kernel.items()
    }
    with pytest.raises(ValueError, match="another candidate"):
        settings.certifications(1, None)


@pytest.mark.parametrize(
    "schedule",
    [
        [[1, 3, 3], [4, 4096, 0]],  # speculates at batches 1-3 only: a closed loop's dips
        [[1, 8, 3], [9, 4096, 0]],  # the offer's shape: k up to the concurrency that passed
        [[1, 2, 0], [5, 4096, 0]],  # batches 3-4 in no range: their k is not known to be 0
        [[1, 16, 0]],  # batches 17-32 past the last range: likewise
    ],
)
def test_a_gain_is_asked_wherever_a_stage_may_still_speculate(schedule: list[list[int]]) -> None:
    """Hole 6: k = 0 at the nominal concurrency is not enough to skip the Speedup gate; a
    closed loop's batches fall below it, so k > 0 (or an unknown k) anywhere in 1..32 is
    measured there and the gate asking a gain is judged."""
    scheduled = EAGLE3.model_copy(update={"num_speculative_tokens_per_batch_size": schedule})
    stage = stage_context(_spec(SCHEDULED_RELEASE), 1, setting_of(scheduled))  # concurrency 32
    gain = GateSpec(name="gain", type=GateType.SPEEDUP)
    assert certify(gain, stage).certifies


def test_a_request_rate_stage_always_judges_the_gain() -> None:
    """An open loop's batch size is whatever arrivals make it: never skipped."""
    off_to_4096 = EAGLE3.model_copy(
        update={"num_speculative_tokens_per_batch_size": [[1, 4095, 0], [4096, 4096, 3]]}
    )
    stages = [default_stages()[1].model_copy(update={"concurrency": None, "request_rate": 2.0})]
    spec = _spec(SCHEDULED_RELEASE).model_copy(
        update={"analysis": _spec().analysis.model_copy(update={"stages": stages})}
    )
    stage = stage_context(spec, 0, setting_of(off_to_4096))
    assert certify(GateSpec(name="g", type=GateType.SPEEDUP), stage).certifies


def test_adopting_the_offer_in_the_same_edit_as_a_gate_still_restarts_the_analysis() -> None:
    """While the offer is analysed, writing it into the spec adopts it without a restart,
    but a gate loosened in the same write is a new plan: the analysis restarts instead of
    judging the stage begun under the old gate by the new one (a review found it promoted)."""
    spec = _spec(SCHEDULED_RELEASE, schedule_fallback=ScheduleFallback.ANALYZE)
    failed = _to_the_tail_failure(spec, analyzing(spec))
    offer = failed.schedule_offer
    assert offer is not None
    status = run(spec, failed, shadows_ready(candidate=offer), 200).status
    for second in (231, 246, 261, 276, 291):
        status = run(spec, status, _stage0(offer), second).status
    at_line = stage_obs(
        "tail-latency",
        baseline=_latencies(1.0, 20_000, 3, tpot=0.05),
        candidate=_latencies(1.45, 20_000, 5, tpot=0.05),
    )
    for second in (322, 337, 352, 367, 382):
        status = run(spec, status, shadows_ready(candidate=offer, stage=at_line), second).status
    assert status.phase is Phase.ANALYZING and status.analysed_for is not None
    stages = list(spec.analysis.stages)
    loosened = [
        gate.model_copy(update={"tolerance": 1.0}) if gate.name == "p99-itl" else gate
        for gate in stages[1].gates
    ]
    stages[1] = stages[1].model_copy(update={"gates": loosened})
    edited = spec.model_copy(
        update={
            "speculative": config_of(offer),
            "analysis": spec.analysis.model_copy(update={"stages": stages}),
        }
    )
    decision = run(edited, status, shadows_ready(candidate=offer, stage=at_line), 397)
    assert "EvidenceChanged" in [event.reason for event in decision.events]
    assert decision.status.phase is not Phase.PROMOTING
    assert decision.status.analysed_for is None
    assert decision.status.candidate_fingerprint == fingerprint_of(offer)
    # adopting the offer alone goes on analysing it, with no restart
    adopted = spec.model_copy(update={"speculative": config_of(offer)})
    quiet = run(adopted, status, shadows_ready(candidate=offer, stage=at_line), 397)
    assert "EvidenceChanged" not in [event.reason for event in quiet.events]
    assert quiet.status.analysed_for is None
