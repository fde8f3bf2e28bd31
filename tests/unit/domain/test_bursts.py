"""The burst measure on exact values, and both latency gates refusing a bursting side.

A chunk gap under 1 ms is no engine step: the share of such gaps says a side's chunks
were held and delivered together. Over 5 % of a side's gaps, the Speedup and TailLatency
gates refuse the look in either direction, naming the side (the LoadSaturated gauge).
"""

from __future__ import annotations

import random

import pytest

from specdecode.adapters.gate_boundary import gate_params
from specdecode.api.gate_spec import GateSpec
from specdecode.api.status_budget import MAX_REASON_LENGTH
from specdecode.domain import bursts
from specdecode.domain.bursts import BURST_GAP_SECONDS, burst_gaps, bursty_delivery
from specdecode.domain.gate_measures import LOAD_CLIENT_LIMIT, UnsentLimit
from specdecode.domain.gates.registry import Look
from specdecode.domain.gates.speedup import SpeedupGate
from specdecode.domain.gates.tail_latency import measure_client_tail, saturated_side
from specdecode.domain.observations import LatencyBlock, LatencySamples, StageObservations
from specdecode.domain.sketch import Sketch, bucket_index
from specdecode.vocabulary import GateVerdict

pytestmark = pytest.mark.unit

BLOCKS = 60
P99 = gate_params(GateSpec.model_validate({"name": "p99", "type": "TailLatency"}))
SPEED = gate_params(
    GateSpec.model_validate({"name": "speed", "type": "Speedup", "minSpeedup": 1.1})
)


def test_the_share_counts_gaps_under_the_floor_exactly() -> None:
    gaps = Sketch.of([0.0, 1e-6, 1.5e-4, 0.99e-3, 1e-3, 1.01e-3, 0.002, 0.010, 0.5])
    assert burst_gaps(gaps) == (4, 9)  # 0, 1 us, 150 us, 990 us; not 1 ms nor above
    assert burst_gaps(Sketch()) == (0, 0)
    assert BURST_GAP_SECONDS == 1e-3


@pytest.mark.parametrize("spacing", [1.5e-4, 3e-4, 5e-4, 9.5e-4])
def test_held_chunks_written_under_a_millisecond_apart_count(
    spacing: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sender stepping over the old 0.1 ms floor: every gap counts now. Control: under
    the old floor none did."""
    gaps = Sketch.of([spacing] * 100)
    assert burst_gaps(gaps) == (100, 100)
    monkeypatch.setattr(bursts, "_BURST_BUCKET", bucket_index(1e-4))
    assert burst_gaps(gaps) == (0, 100)


def samples(gaps: list[float], tpot: list[float]) -> LatencySamples:
    return LatencySamples.from_values(
        per_chunk_itl=gaps, per_token_itl=gaps, time_per_output_token=tpot,
        requests_ok=len(tpot), output_tokens=16 * len(tpot),
    )  # fmt: skip


def test_a_side_over_five_percent_is_refused_naming_it_and_the_share() -> None:
    healthy = samples([0.010] * 100, [0.010])
    at_limit = samples([0.0] * 5 + [0.010] * 95, [0.010])  # 5 of 100: not over 5 %
    over = samples([0.0] * 6 + [0.010] * 94, [0.010])
    assert bursty_delivery(healthy, at_limit, LOAD_CLIENT_LIMIT) is None
    reason = bursty_delivery(healthy, over, LOAD_CLIENT_LIMIT)
    assert reason is not None and saturated_side(reason) == "candidate"
    assert "6 of its 100 chunk gaps (6%) are under 1 ms (over 5%)" in reason
    assert "add load pods" in reason  # the remedy
    reason = bursty_delivery(over, healthy, UnsentLimit(splitter_in_flight=64))
    assert reason is not None and saturated_side(reason) == "baseline"
    assert "splitter" in reason and len(reason) <= MAX_REASON_LENGTH


def blocked(seed: int, scale: float, burst_share: float = 0.0) -> LatencySamples:
    """60 two-second blocks of lognormal gaps and TPOTs (median ~20 ms * scale); a share
    of each block's gaps replaced by zeros, and the TPOT of as many requests by 1 us."""
    rng = random.Random(seed)
    blocks = []
    for i in range(BLOCKS):
        gaps = [scale * rng.lognormvariate(-3.9, 0.3) for _ in range(400)]
        tpot = [scale * rng.lognormvariate(-3.9, 0.2) for _ in range(40)]
        bursts = int(burst_share * len(gaps))
        gaps[:bursts] = [0.0] * bursts
        tpot[: int(burst_share * len(tpot))] = [1e-6] * int(burst_share * len(tpot))
        blocks.append(
            LatencyBlock(
                start=2.0 * i, seconds=2.0, per_chunk_itl=Sketch.of(gaps),
                per_token_itl=Sketch.of(gaps), time_per_output_token=Sketch.of(tpot),
                requests_ok=40, output_tokens=40 * 11, chunks=400,
            )
        )  # fmt: skip
    return LatencySamples(blocks=tuple(blocks), window_seconds=2.0 * BLOCKS, shards=1)


def speedup(baseline: LatencySamples, candidate: LatencySamples) -> tuple[GateVerdict, str]:
    seen = StageObservations("s", baseline_latency=baseline, candidate_latency=candidate)
    measured = SpeedupGate().measure(SPEED, seen, Look(0.01))
    return measured.verdict, measured.reason


def tail(baseline: LatencySamples, candidate: LatencySamples) -> tuple[GateVerdict, str]:
    measured = measure_client_tail(P99, baseline, candidate, Look(0.01))
    return measured.verdict, measured.reason


def test_a_bursting_side_is_refused_whichever_verdict_it_would_get() -> None:
    """60 % of a side's gaps at 0 and of its requests' TPOTs at 1 us: refused both ways.
    Controls: the same sides without bursts are judged."""
    base, slow = blocked(1, 1.0), blocked(2, 1.5)
    assert speedup(base, slow)[0] is GateVerdict.FAILED  # controls: judged
    assert tail(base, slow)[0] is GateVerdict.FAILED
    for verdict, reason in (
        speedup(base, blocked(2, 1.5, burst_share=0.6)),  # would pass on speed
        tail(base, blocked(2, 1.5, burst_share=0.6)),
        speedup(blocked(1, 1.0, burst_share=0.6), slow),
        tail(blocked(1, 1.0, burst_share=0.6), slow),
    ):
        assert verdict is GateVerdict.INCONCLUSIVE, reason
        assert saturated_side(reason) in ("baseline", "candidate") and "in bursts" in reason


def test_the_bursting_candidate_would_have_passed_on_speed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The control for the refusal above: without the check, a false pass."""
    from specdecode.domain.gates import speedup as speedup_module

    monkeypatch.setattr(speedup_module, "bursty_delivery", lambda *_: None)
    verdict, reason = speedup(blocked(1, 1.0), blocked(2, 1.5, burst_share=0.6))
    assert verdict is GateVerdict.SUCCESSFUL, reason


def test_speedup_refuses_a_look_whose_client_lags_over_5_percent_of_the_span() -> None:
    """The client-delay check, judged against a request's first-to-last span (median TPOT
    times its gaps, ~20 ms * 10 here): a 5 ms P50 delay is 2.5 %, judged; 15 ms, refused."""
    base, fast = blocked(1, 1.0), blocked(2, 1 / 1.5)

    def with_delay(side: LatencySamples, delay: float) -> LatencySamples:
        first = side.blocks[0]
        delayed = LatencyBlock(**{**first.__dict__, "client_delay": Sketch.of([delay] * 100)})
        return LatencySamples(blocks=(delayed, *side.blocks[1:]), window_seconds=120.0, shards=1)

    assert speedup(base, with_delay(fast, 0.005))[0] is GateVerdict.SUCCESSFUL
    verdict, reason = speedup(base, with_delay(fast, 0.015))
    assert verdict is GateVerdict.INCONCLUSIVE and saturated_side(reason) == "candidate", reason
    assert "timestamp delay" in reason
