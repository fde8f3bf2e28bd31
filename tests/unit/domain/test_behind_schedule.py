"""An open-loop side that fell behind its request rate is never evidence in its own favour.

The load pods' sender skips arrivals once it is over a second behind its Poisson schedule
and reports how many (`LatencyBlock.arrivals_skipped`). A side that skipped over 1 % of
what it was offered was measured at a lighter load than the stage's, which flatters it:
a candidate's pass (TailLatency, Speedup) is then refused ("shadow load saturated",
naming the side, which the LoadSaturated gauge reads), but its failure stands; a
baseline's shortfall refuses the candidate's failure, not its pass. Each refusal has a
control: the same evidence with a shortfall under 1 % is judged.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from domain_fixtures import (
    acceptance,
    acceptance_stage,
    analyzing,
    make_spec,
    run,
    shadows_ready,
    stage_obs,
    streamed,
)

from specdecode.adapters.gate_boundary import gate_params
from specdecode.api import GateType
from specdecode.api.gate_spec import GateSpec
from specdecode.api.status import Phase
from specdecode.api.status_budget import MAX_REASON_LENGTH
from specdecode.api.traffic import TrafficSpec
from specdecode.domain.analyzing import look_plan
from specdecode.domain.gate_measures import (
    LOAD_CLIENT_LIMIT,
    MAX_SKIPPED_SHARE,
    SATURATED,
    UnsentLimit,
)
from specdecode.domain.gates.registry import Look
from specdecode.domain.gates.speedup import SpeedupGate
from specdecode.domain.gates.tail_latency import measure_client_tail, saturated_side
from specdecode.domain.observations import LatencyBlock, LatencySamples, StageObservations
from specdecode.domain.sketch import Sketch
from specdecode.reconciler.rollout_boundary import settings_of
from specdecode.vocabulary import GateVerdict

pytestmark = pytest.mark.unit

BLOCKS = 80
REQUESTS_PER_BLOCK = 100  # 8,000 requests ended per side
SENT = BLOCKS * REQUESTS_PER_BLOCK
TOO_MANY = int(3 * MAX_SKIPPED_SHARE * SENT)  # 3 % of what was offered: a lighter load
A_FEW = int(0.5 * MAX_SKIPPED_SHARE * SENT)  # 0.5 %: a hiccup, still judged
P99 = gate_params(GateSpec.model_validate({"name": "p99", "type": "TailLatency"}))


def side(values: list[float], skipped: int = 0) -> LatencySamples:
    """`values` as both ITL and TPOT, dealt into 2-second blocks; `skipped` in the last."""
    per_block = len(values) // BLOCKS
    blocks = tuple(
        LatencyBlock(
            start=2.0 * i,
            seconds=2.0,
            per_chunk_itl=Sketch.of(values[i * per_block : (i + 1) * per_block]),
            per_token_itl=Sketch.of(values[i * per_block : (i + 1) * per_block]),
            time_per_output_token=Sketch.of(values[i * per_block : (i + 1) * per_block]),
            requests_ok=REQUESTS_PER_BLOCK,
            arrivals_skipped=skipped if i == BLOCKS - 1 else 0,
        )
        for i in range(BLOCKS)
    )
    return LatencySamples(blocks=blocks, window_seconds=2.0 * BLOCKS, shards=1)


def draws(seed: int, scale: float = 1.0) -> list[float]:
    rng = random.Random(seed)
    return [scale * rng.lognormvariate(-3.9, 0.2) for _ in range(40000)]


def tail(baseline: LatencySamples, candidate: LatencySamples) -> tuple[GateVerdict, str]:
    measured = measure_client_tail(P99, baseline, candidate, Look(0.01))
    return measured.verdict, measured.reason


def test_a_candidate_short_of_the_rate_cannot_pass_on_the_tail() -> None:
    base = side(draws(1))
    assert tail(base, side(draws(2), skipped=A_FEW))[0] is GateVerdict.SUCCESSFUL  # control
    verdict, reason = tail(base, side(draws(2), skipped=TOO_MANY))
    assert verdict is GateVerdict.INCONCLUSIVE
    assert reason.startswith(f"{SATURATED}: the candidate load client fell behind")
    assert f"skipped {TOO_MANY} of {TOO_MANY + SENT} arrivals" in reason
    assert saturated_side(reason) == "candidate"  # the LoadSaturated gauge's side


def test_a_candidate_short_of_the_rate_that_still_fails_fails() -> None:
    """Lighter load flattered it and it failed anyway: the failure stands, with the why."""
    verdict, reason = tail(side(draws(1)), side(draws(2, scale=2.0), skipped=TOO_MANY))
    assert verdict is GateVerdict.FAILED
    assert "the candidate load client fell behind" in reason
    assert saturated_side(reason) is None  # not a refusal: no saturation alert


def test_a_baseline_short_of_the_rate_refuses_the_failure_not_the_pass() -> None:
    short_baseline = side(draws(1), skipped=TOO_MANY)
    assert tail(short_baseline, side(draws(2)))[0] is GateVerdict.SUCCESSFUL
    assert tail(side(draws(1)), side(draws(2, scale=2.0)))[0] is GateVerdict.FAILED  # control
    verdict, reason = tail(short_baseline, side(draws(2, scale=2.0)))
    assert verdict is GateVerdict.INCONCLUSIVE and saturated_side(reason) == "baseline"


def test_a_candidate_short_of_the_rate_cannot_pass_on_speed() -> None:
    gate = gate_params(
        GateSpec.model_validate({"name": "speed", "type": "Speedup", "minSpeedup": 1.1})
    )
    base = side(draws(1))

    def look(candidate: LatencySamples) -> GateVerdict:
        seen = StageObservations("s", baseline_latency=base, candidate_latency=candidate)
        return SpeedupGate().measure(gate, seen, Look(0.01)).verdict

    assert look(side(draws(2, scale=1 / 1.3), skipped=A_FEW)) is GateVerdict.SUCCESSFUL
    assert look(side(draws(2, scale=1 / 1.3), skipped=TOO_MANY)) is GateVerdict.INCONCLUSIVE


@pytest.mark.parametrize("skipped", [0, TOO_MANY])
def test_a_fail_only_tail_gate_still_rolls_back_a_short_candidate_that_fails(
    skipped: int,
) -> None:
    """A hostile review's case: an open-loop stage gated on Acceptance and a failOnly P99
    gate, the candidate's tail 2x the baseline's. Had its shortfall made the look merely
    Inconclusive, the failOnly gate would not block and the stage would pass on alpha."""
    good = acceptance(0.75, drafts=20_000, requests=300)
    gates = [
        GateSpec(name="alpha", type=GateType.ACCEPTANCE, min_alpha=0.55),
        GateSpec(name="p99", type=GateType.TAIL_LATENCY, tolerance=0.1, fail_only=True),
    ]
    spec = make_spec(stages=[acceptance_stage(gates=gates, concurrency=None, request_rate=10.0)])
    candidate = side(draws(2, scale=2.0), skipped=skipped)
    moments = streamed(good).blocks[0].accepted
    candidate = dataclasses.replace(
        candidate,
        blocks=(dataclasses.replace(candidate.blocks[0], accepted=moments), *candidate.blocks[1:]),
    )
    seen = stage_obs("acceptance", good, baseline=side(draws(1)), candidate=candidate)
    status = analyzing(spec)
    for seconds in (31, 46, 61, 76, 91, 106):
        status = run(spec, status, shadows_ready(stage=seen), seconds).status
    assert status.phase is Phase.ROLLED_BACK, (status.phase, status.message)
    assert status.reason == "GateFailed"


def test_both_sides_short_name_the_side_that_explains_the_refusal() -> None:
    """A pass refused because both fell behind is the candidate's shortfall's doing; a
    failure refused, the baseline's. The reason (and the LoadSaturated gauge) says which."""
    verdict, reason = tail(side(draws(1), skipped=TOO_MANY), side(draws(2), skipped=TOO_MANY))
    assert verdict is GateVerdict.INCONCLUSIVE and saturated_side(reason) == "candidate"
    slower = side(draws(2, scale=2.0), skipped=TOO_MANY)
    verdict, reason = tail(side(draws(1), skipped=TOO_MANY), slower)
    assert verdict is GateVerdict.INCONCLUSIVE and saturated_side(reason) == "baseline"


# Mirror through the splitter: it sheds the same mirrored requests on both sides, counted
# as arrivals not sent, up to the rollout's spec.analysis.traffic.splitter.maxShedFraction.
def mirror_look(**splitter: Any) -> Look:
    """A look of a Mirror rollout through the splitter (its settings as given)."""
    traffic = TrafficSpec.model_validate({"source": "Mirror", "splitter": splitter})
    plan = look_plan(settings_of(make_spec(traffic=traffic)), 0, 30.0)
    return Look(0.01, unsent=plan.unsent)


def test_a_splitter_that_shed_over_its_share_refuses_every_verdict_and_says_what_to_do() -> None:
    look = mirror_look(maxInFlight=4)
    assert look.unsent == UnsentLimit(0.01, 4)  # the API's default share, the rollout's cap
    same, slower = draws(2), draws(2, scale=2.0)
    for candidate, judged in ((same, GateVerdict.SUCCESSFUL), (slower, GateVerdict.FAILED)):
        shed_a_few = measure_client_tail(
            P99, side(draws(1), skipped=A_FEW), side(candidate, skipped=A_FEW), look
        )
        assert shed_a_few.verdict is judged  # control: under the share, judged
        shed = measure_client_tail(
            P99, side(draws(1), skipped=TOO_MANY), side(candidate, skipped=TOO_MANY), look
        )
        assert shed.verdict is GateVerdict.INCONCLUSIVE, shed.reason
        assert f"lost {TOO_MANY} of {TOO_MANY + SENT} mirrored requests" in shed.reason
        assert "splitter sheds" in shed.reason and "at its cap of 4 in flight" in shed.reason
        for remedy in ("splitter.maxInFlight", "splitter.cpu", "mirrorPercent"):
            assert remedy in shed.reason, shed.reason
        assert "load pods" not in shed.reason and "requestRate" not in shed.reason
        assert saturated_side(shed.reason) in ("baseline", "candidate")  # the gauge reads it


def test_a_splitter_shed_over_its_share_on_one_side_only_still_refuses_the_pass() -> None:
    """The splitter sheds the same requests on both sides, but the shares' denominators
    differ by what each side still had in flight: the slower side can sit just over the
    limit while the faster sits just under. Its pass must not stand (review finding)."""
    look = mirror_look()
    limit = int(0.01 * SENT)
    just_over, just_under = side(draws(1), skipped=limit + 1), side(draws(2), skipped=limit - 1)
    shed = measure_client_tail(P99, just_over, just_under, look)
    assert shed.verdict is GateVerdict.INCONCLUSIVE, shed.reason
    assert saturated_side(shed.reason) == "baseline"
    prompts = measure_client_tail(P99, just_over, just_under, Look(0.01))
    assert prompts.verdict is GateVerdict.SUCCESSFUL  # control: Prompts keeps the direction


def test_the_shed_share_a_splitter_look_tolerates_is_the_rollouts() -> None:
    shed_3_percent = (side(draws(1), skipped=TOO_MANY), side(draws(2), skipped=TOO_MANY))
    strict = measure_client_tail(P99, *shed_3_percent, mirror_look())
    assert strict.verdict is GateVerdict.INCONCLUSIVE  # control: the default 1 %
    assert "over 1% = traffic.splitter.maxShedFraction" in strict.reason
    tolerant = measure_client_tail(P99, *shed_3_percent, mirror_look(maxShedFraction=0.05))
    assert tolerant.verdict is GateVerdict.SUCCESSFUL, tolerant.reason
    gate = gate_params(
        GateSpec.model_validate({"name": "speed", "type": "Speedup", "minSpeedup": 1.1})
    )
    faster = side(draws(2, scale=1 / 1.3), skipped=TOO_MANY)
    seen = StageObservations("s", baseline_latency=shed_3_percent[0], candidate_latency=faster)
    assert SpeedupGate().measure(gate, seen, mirror_look()).verdict is GateVerdict.INCONCLUSIVE
    judged = SpeedupGate().measure(gate, seen, mirror_look(maxShedFraction=0.05))
    assert judged.verdict is GateVerdict.SUCCESSFUL


def test_the_splitters_remedy_survives_the_status_reasons_length() -> None:
    """Status cuts a gate's reason at MAX_REASON_LENGTH: what to change must fit before it,
    with the largest numbers a day of looks could hold."""
    why = UnsentLimit(0.1, 1024).shortfall("candidate", 10**9, 10**10)
    assert len(why) <= MAX_REASON_LENGTH and why.endswith("lower mirrorPercent"), len(why)


def test_prompts_traffic_keeps_the_load_clients_share_and_remedy() -> None:
    assert look_plan(settings_of(make_spec()), 0, 30.0).unsent == LOAD_CLIENT_LIMIT
    verdict, reason = tail(side(draws(1)), side(draws(2), skipped=TOO_MANY))
    assert verdict is GateVerdict.INCONCLUSIVE and "add load pods" in reason
