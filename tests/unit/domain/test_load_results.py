"""What the load pods report and how one side's window is built from it (pure)."""

from __future__ import annotations

import math
import random

import pytest
from exact_quantile import quantile_interval

from specdecode.adapters.gate_boundary import gate_params
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.gate_spec import GateSpec
from specdecode.api.status import GateVerdict
from specdecode.api.traffic import LoadGeneratorSpec
from specdecode.domain.gates.registry import Look
from specdecode.domain.gates.tail_latency import measure_client_tail
from specdecode.domain.load_report import (
    Gap,
    LoadReport,
    ReportError,
    report_from_wire,
    report_to_wire,
)
from specdecode.domain.load_sizing import size_load
from specdecode.domain.load_window import side_window
from specdecode.domain.observations import AcceptedMoments, LatencyBlock, LatencySamples
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.sketch import RELATIVE_ACCURACY, Sketch, bucket_lower, bucket_upper
from specdecode.domain.stage_state import StageRun
from specdecode.domain.stats import sketch_quantile_interval
from specdecode.reconciler.analysis_boundary import capacity_of
from specdecode.reconciler.status_boundary import status_of

pytestmark = pytest.mark.unit


def block(start: float, gaps: list[float], seconds: float = 2.0) -> LatencyBlock:
    return LatencyBlock(
        start=start,
        seconds=seconds,
        per_chunk_itl=Sketch.of(gaps),
        per_token_itl=Sketch.of(gaps, [2] * len(gaps)),
        requests_ok=1,
        chunks=len(gaps),
        accepted=AcceptedMoments.of([(len(gaps), len(gaps))]),
    )


def report(shard: int, blocks: list[LatencyBlock], gaps: tuple[Gap, ...] = ()) -> LoadReport:
    return LoadReport(
        side="candidate",
        shard=shard,
        shards=2,
        boot_time=0.0,
        restarts=len(gaps),
        block_seconds=2.0,
        sent=10,
        output_tokens=100,
        cap_reached=False,
        blocks=tuple(blocks),
        gaps=gaps,
    )


def test_sketch_values_are_within_half_a_percent() -> None:
    rng = random.Random(1)
    for value in (rng.lognormvariate(-4, 1.5) for _ in range(2000)):
        sketch = Sketch.of([value])
        assert abs(sketch.quantile(0.5) - value) <= RELATIVE_ACCURACY * value * 1.0001
        index = next(iter(sketch.counts))
        assert bucket_lower(index) < value <= bucket_upper(index)


def test_sketch_quantile_bounds_contain_the_exact_order_statistic_bounds() -> None:
    rng = random.Random(2)
    values = [rng.lognormvariate(-3.5, 0.4) for _ in range(5000)]
    exact = quantile_interval(values, 0.99, 0.01)
    sketched = sketch_quantile_interval(Sketch.of(values), 0.99, 0.01)
    assert exact is not None and sketched is not None
    assert sketched.lower <= exact.lower and sketched.upper >= exact.upper
    assert sketched.upper <= exact.upper * (1 + 2 * RELATIVE_ACCURACY)
    assert math.isclose(sketched.value, exact.value, rel_tol=2 * RELATIVE_ACCURACY)


def test_report_survives_the_wire_and_rejects_garbage() -> None:
    original = report(1, [block(10.0, [0.02, 0.03])], (Gap(4.0, 8.0, "restarted"),))
    assert report_from_wire(report_to_wire(original)) == original
    wire = report_to_wire(original)
    wire["blocks"][0]["requestsOk"] = -1
    with pytest.raises(ReportError, match="requestsOk"):
        report_from_wire(wire)
    with pytest.raises(ReportError, match="schema"):
        report_from_wire({"schema": 99})
    with pytest.raises(ReportError, match="missing"):
        report_from_wire({"schema": 1, "side": "baseline"})


def test_window_merges_shards_per_block_and_keeps_whole_blocks_inside() -> None:
    shard0 = report(0, [block(8.0, [0.01]), block(10.0, [0.02]), block(12.0, [0.03])])
    shard1 = report(1, [block(10.0, [0.04, 0.05]), block(12.0, [0.06])])
    window = side_window("candidate", [shard0, shard1], [], since=10.0, now=13.5)
    assert window is not None and window.incomplete is None
    # 8.0 predates the window; 12.0 is not over at 13.5.
    assert [b.start for b in window.blocks] == [10.0]
    assert window.blocks[0].chunks == 3 and window.per_chunk_itl.total == 3
    assert window.per_token_itl.total == 6  # weighted by tokens, not repeated
    assert window.accepted.requests == 2


def test_a_restart_gap_drops_those_blocks_on_every_shard_and_is_named() -> None:
    restarted = report(0, [block(10.0, [0.01]), block(16.0, [0.01])], (Gap(11.0, 15.0, "x"),))
    steady = report(1, [block(10.0, [0.02]), block(12.0, [0.02]), block(16.0, [0.02])])
    window = side_window("candidate", [restarted, steady], [], since=10.0, now=30.0)
    assert window is not None
    assert [b.start for b in window.blocks] == [16.0]
    assert window.gaps and "shard 0" in window.gaps[0] and "4 s" in window.gaps[0]


def test_a_pod_created_inside_the_window_was_missing_until_its_warm_up_ended() -> None:
    replacement = LoadReport(**{**report(0, [block(20.0, [0.01])]).__dict__, "boot_time": 14.0})
    steady = report(1, [block(10.0, [0.02]), block(16.0, [0.02]), block(20.0, [0.02])])
    window = side_window("candidate", [replacement, steady], [], since=10.0, now=30.0)
    assert window is not None
    assert [b.start for b in window.blocks] == [20.0]  # 14 s boot + 5 s warm-up
    assert "started late" in window.gaps[0]


def test_a_silent_shard_makes_the_window_incomplete_and_the_gate_inconclusive() -> None:
    answered = report(0, [block(10.0, [0.02] * 500)])
    window = side_window("candidate", [answered], ["load pod p-1 did not answer"], 10.0, 20.0)
    assert window is not None and window.incomplete is not None
    assert "p-1" in window.incomplete
    full = LatencySamples.from_values(per_token_itl=[0.02] * 5000)
    gate = GateSpec.model_validate({"name": "p99", "type": "TailLatency"})
    look = measure_client_tail(gate_params(gate), full, window, Look(0.01))
    assert look.verdict is GateVerdict.INCONCLUSIVE and "did not answer" in look.reason
    assert side_window("candidate", [], [], 10.0, 20.0) is None


def blocks_of(values: list[float], delay: float, per_block: int = 500) -> LatencySamples:
    """Independent values spread over 2-second blocks, each with the client's delay probe."""
    blocks = tuple(
        LatencyBlock(
            start=2.0 * i,
            seconds=2.0,
            per_chunk_itl=Sketch.of(values[i * per_block : (i + 1) * per_block]),
            client_delay=Sketch.of([delay] * 20),
        )
        for i in range(len(values) // per_block)
    )
    return LatencySamples(blocks=blocks, window_seconds=2.0 * len(blocks), shards=1)


def test_a_lagging_client_makes_the_look_inconclusive_not_a_verdict() -> None:
    gate = GateSpec.model_validate({"name": "p99", "type": "TailLatency", "tolerance": 0.1})
    rng = random.Random(3)
    base = [rng.lognormvariate(-3.9, 0.2) for _ in range(40000)]
    worse = [1.5 * rng.lognormvariate(-3.9, 0.2) for _ in range(40000)]
    honest = blocks_of(base, delay=0.0002)
    look = measure_client_tail(
        gate_params(gate), honest, blocks_of(worse, delay=0.0002), Look(0.01)
    )
    assert look.verdict is GateVerdict.FAILED, look.reason  # control: exact clocks decide
    look = measure_client_tail(gate_params(gate), honest, blocks_of(worse, delay=0.02), Look(0.01))
    assert look.verdict is GateVerdict.INCONCLUSIVE
    assert "shadow load saturated" in look.reason


@pytest.mark.parametrize(
    ("concurrency", "rate", "pods", "processes"),
    [(4, None, 1, 1), (64, None, 1, 3), (256, None, 3, 4), (4096, None, 16, 4), (None, 2.0, 1, 1)],
)
def test_load_is_sized_from_the_expected_chunk_rate(
    concurrency: int | None, rate: float | None, pods: int, processes: int
) -> None:
    generator = capacity_of(LoadGeneratorSpec())  # 2,800 chunks/s a process, 10 ms steps, 4 a pod
    shape = size_load(generator, concurrency, rate, max_tokens=256)
    assert (shape.pods_per_side, shape.processes_per_pod) == (pods, processes)


def test_sizing_defaults_are_in_the_crd() -> None:
    schema = SpecDecodeRolloutSpec.model_json_schema(by_alias=True)
    assert "loadGenerator" in str(schema) and "chunksPerSecondPerProcess" in str(schema)


def test_status_and_the_gate_table_show_the_loads_health() -> None:
    from specdecode.domain.load_status import load_status
    from specdecode.domain.observations import StageObservations
    from specdecode.reconciler.stage_load import load_status_of
    from specdecode.report import gate_table

    base = LatencySamples.from_values(per_token_itl=[0.02], requests_ok=7, client_delay=[0.0004])
    cand = side_window("candidate", [], ["load pod p-1 did not answer"], 0.0, 1.0)
    seen = StageObservations("s", baseline_latency=base, candidate_latency=cand)
    summary = load_status_of(load_status(seen))  # as the status written shows it
    assert summary is not None
    assert summary.shards == "1/0" and summary.requests == 7
    assert summary.client_delay_p99_ms == pytest.approx(0.4, rel=0.01)
    assert summary.notes == ["candidate load incomplete: load pod p-1 did not answer"]
    assert summary.outcomes == ["baseline: 7 ok; 0 stalls", "candidate: 0 ok; 0 stalls"]
    state = RolloutState(current_stage_index=0, stages=[StageRun(name="s", load=summary)])
    status = status_of(state).to_wire()
    table = gate_table({"metadata": {"name": "r"}, "status": status})
    assert "shadow load: shards 1/0" in table and "0.40 ms" in table and "p-1" in table
    assert "baseline: 7 ok; 0 stalls" in table
    assert load_status(StageObservations("s")) is None
