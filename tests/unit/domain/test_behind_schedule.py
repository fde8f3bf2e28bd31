"""An open-loop side that fell behind its request rate is never compared (pure).

The load pods' sender skips arrivals once it is over a second behind its Poisson schedule
and reports how many (`LatencyBlock.arrivals_skipped`). Such a side was measured at less
than the stage's load, which flatters its latency, so the comparing gates (TailLatency,
Speedup) refuse the look, name the side, and the gauge behind SpecDecodeLoadSaturated sees
it. Each test has a control: the same evidence without the shortfall is judged.
"""

from __future__ import annotations

import random

import pytest

from specdecode.api.gate_spec import GateSpec
from specdecode.domain.gate_boundary import gate_params
from specdecode.domain.gate_measures import MAX_SKIPPED_SHARE, SATURATED
from specdecode.domain.gates.registry import Look
from specdecode.domain.gates.speedup import SpeedupGate
from specdecode.domain.gates.tail_latency import measure_client_tail, saturated_side
from specdecode.domain.observations import LatencyBlock, LatencySamples, StageObservations
from specdecode.domain.sketch import Sketch
from specdecode.vocabulary import GateVerdict

pytestmark = pytest.mark.unit

BLOCKS = 80
REQUESTS_PER_BLOCK = 100  # 8,000 requests sent per side


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


SENT = BLOCKS * REQUESTS_PER_BLOCK
TOO_MANY = int(3 * MAX_SKIPPED_SHARE * SENT)  # 3 % of what was offered: refused
A_FEW = int(0.5 * MAX_SKIPPED_SHARE * SENT)  # 0.5 %: a hiccup, still judged


def test_a_candidate_short_of_the_rate_is_not_compared_on_the_tail() -> None:
    gate = gate_params(GateSpec.model_validate({"name": "p99", "type": "TailLatency"}))
    base = side(draws(1))
    judged = measure_client_tail(gate, base, side(draws(2), skipped=A_FEW), Look(0.01))
    assert judged.verdict is GateVerdict.SUCCESSFUL, judged.reason  # control
    refused = measure_client_tail(gate, base, side(draws(2), skipped=TOO_MANY), Look(0.01))
    assert refused.verdict is GateVerdict.INCONCLUSIVE and refused.value is None
    assert refused.reason.startswith(f"{SATURATED}: the candidate load client fell behind")
    assert f"skipped {TOO_MANY} of {TOO_MANY + SENT} arrivals" in refused.reason
    assert saturated_side(refused.reason) == "candidate"  # the LoadSaturated gauge's side


def test_a_baseline_short_of_the_rate_is_named_too() -> None:
    gate = gate_params(GateSpec.model_validate({"name": "p99", "type": "TailLatency"}))
    refused = measure_client_tail(
        gate, side(draws(1), skipped=TOO_MANY), side(draws(2)), Look(0.01)
    )
    assert refused.verdict is GateVerdict.INCONCLUSIVE
    assert saturated_side(refused.reason) == "baseline"


def test_a_candidate_short_of_the_rate_is_not_compared_on_speed() -> None:
    gate = gate_params(
        GateSpec.model_validate({"name": "speed", "type": "Speedup", "minSpeedup": 1.1})
    )
    base = side(draws(1))

    def look(candidate: LatencySamples) -> GateVerdict:
        seen = StageObservations("s", baseline_latency=base, candidate_latency=candidate)
        return SpeedupGate().measure(gate, seen, Look(0.01)).verdict

    assert look(side(draws(2, scale=1 / 1.3), skipped=A_FEW)) is GateVerdict.SUCCESSFUL
    assert look(side(draws(2, scale=1 / 1.3), skipped=TOO_MANY)) is GateVerdict.INCONCLUSIVE
