"""Operator metrics fit for on-call, and the leader's hand-over.

Series of a finished stage and of a deleted rollout disappear; reconciles and API requests
are counted. A replica reconciles only while it holds the Lease; one that loses it stops
at once, never releases what is not its own, and exits non-zero.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from specdecode.adapters.telemetry import OperatorMetrics
from specdecode.api.gate_spec import GateType
from specdecode.api.status import (
    GateResult,
    GateVerdict,
    Phase,
    SpecDecodeRolloutStatus,
    StagePhase,
    StageStatus,
)
from specdecode.domain.gate_measures import Measurement, UnsentLimit, unequal_load
from specdecode.domain.gates.tail_latency import saturation
from specdecode.domain.observations import LatencySamples
from specdecode.handlers.leadership import run_when_leading
from specdecode.settings import OperatorSettings

pytestmark = pytest.mark.unit


def analysing(
    stage: str | None, phase: Phase = Phase.ANALYZING, ran: tuple[str, ...] = ()
) -> SpecDecodeRolloutStatus:
    stages = [
        StageStatus(
            name=name,
            phase=StagePhase.SUCCESSFUL if name in ran else StagePhase.PENDING,
            gates=[
                GateResult(
                    name="alpha",
                    type=GateType.ACCEPTANCE,
                    verdict=GateVerdict.SUCCESSFUL,
                    value=0.7,
                    lower_bound=0.65,
                )
            ],
        )
        for name in ("acceptance", "tail-latency")
    ]
    return SpecDecodeRolloutStatus(phase=phase, current_stage=stage, stages=stages)


def stages_with_series(metrics: OperatorMetrics) -> set[str]:
    found = set()
    for family in metrics.registry.collect():
        for sample in family.samples:
            if "stage" in sample.labels:
                found.add(sample.labels["stage"])
    return found


def test_only_the_stage_in_progress_has_series() -> None:
    metrics = OperatorMetrics()
    metrics.observe("ns", "r", SpecDecodeRolloutStatus(), analysing("acceptance"))
    assert stages_with_series(metrics) == {"acceptance"}
    metrics.observe("ns", "r", analysing("acceptance"), analysing("tail-latency"))
    assert stages_with_series(metrics) == {"tail-latency"}
    promoted = analysing(None, Phase.PROMOTED, ran=("acceptance", "tail-latency"))
    metrics.observe("ns", "r", analysing("tail-latency"), promoted)
    assert stages_with_series(metrics) == {"tail-latency"}  # the stage that decided
    metrics.observe("ns", "r", promoted, analysing(None, Phase.DEPLOYING))
    assert stages_with_series(metrics) == set()  # a new analysis: no verdict is current


def test_a_rolled_back_rollout_keeps_its_failing_gate() -> None:
    """SpecDecodeGateFailed reads this series: the look that fails a gate also ends the
    analysis, so the Failed verdict must outlive the stage or no alert ever sees it."""
    metrics = OperatorMetrics()
    ended = analysing(None, Phase.ROLLED_BACK, ran=("acceptance",))
    gate = ended.stages[0].gates[0].model_copy(update={"verdict": GateVerdict.FAILED})
    stage = ended.stages[0].model_copy(update={"gates": [gate]})
    failed = ended.model_copy(update={"stages": [stage, *ended.stages[1:]]})
    metrics.observe("ns", "r", analysing("acceptance"), failed)
    labels = {"namespace": "ns", "rollout": "r", "stage": "acceptance", "gate": "alpha"}
    verdict = metrics.registry.get_sample_value(
        "specdecode_gate_verdict", {**labels, "verdict": "Failed"}
    )
    assert verdict == 1


def test_a_rollback_is_stamped_with_its_time_for_the_alert() -> None:
    """SpecDecodeRolledBack reads this timestamp: a counter born at 1 is invisible to
    increase(), and a timestamp survives scrape gaps."""
    metrics = OperatorMetrics()
    when = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    rolled_back = analysing(None, Phase.ROLLED_BACK).model_copy(update={"phase_since": when})
    metrics.observe("ns", "r", analysing("acceptance"), rolled_back)
    stamp = metrics.registry.get_sample_value(
        "specdecode_last_rollback_timestamp_seconds",
        {"namespace": "ns", "rollout": "r", "reason": "Unknown"},
    )
    assert stamp == when.timestamp()
    metrics.forget("ns", "r")
    assert (
        metrics.registry.get_sample_value(
            "specdecode_last_rollback_timestamp_seconds",
            {"namespace": "ns", "rollout": "r", "reason": "Unknown"},
        )
        is None
    )


def saturated(metrics: OperatorMetrics, stage: str, role: str) -> float | None:
    return metrics.registry.get_sample_value(
        "specdecode_load_saturated",
        {"namespace": "ns", "rollout": "r", "stage": stage, "role": role},
    )


def with_tail_gate(
    status: SpecDecodeRolloutStatus, reason: str, gate_type: GateType = GateType.TAIL_LATENCY
) -> SpecDecodeRolloutStatus:
    """`status` with an Inconclusive gate (TailLatency by default) added to its second stage."""
    tail = GateResult(
        name="p99-itl", type=gate_type, verdict=GateVerdict.INCONCLUSIVE, reason=reason
    )
    stage = status.stages[1]
    stage = stage.model_copy(update={"gates": [*stage.gates, tail]})
    return status.model_copy(update={"stages": [status.stages[0], stage]})


def test_a_saturated_side_is_the_gauge_behind_the_load_alert() -> None:
    """SpecDecodeLoadSaturated reads this gauge: the side whose client lagged, from the
    reason the TailLatency gate really writes (`saturation`), 0 for the other side; a
    TailLatency look judged on honest timestamps sets both to 0."""
    metrics = OperatorMetrics()
    lagging = LatencySamples.from_values(client_delay=[0.004] * 100)
    prompt = LatencySamples.from_values(client_delay=[0.0001] * 100)
    reason = saturation(prompt, lagging, 0.99, 0.02, UnsentLimit())
    assert reason is not None
    running = with_tail_gate(analysing("tail-latency"), reason)
    metrics.observe("ns", "r", analysing("acceptance"), running)
    assert saturated(metrics, "tail-latency", "candidate") == 1
    assert saturated(metrics, "tail-latency", "baseline") == 0
    honest = with_tail_gate(analysing("tail-latency"), "P99 PerChunk ITL: 3 / 3 blocks")
    metrics.observe("ns", "r", running, honest)
    assert saturated(metrics, "tail-latency", "candidate") == 0
    metrics.observe("ns", "r", honest, analysing("acceptance"))  # no TailLatency gate there
    assert saturated(metrics, "acceptance", "candidate") is None
    assert saturated(metrics, "tail-latency", "candidate") is None


def test_a_sender_behind_its_rate_is_the_gauge_too_on_a_speedup_gate() -> None:
    """The open-loop refusal (`unequal_load`), as the Speedup gate writes it."""
    metrics = OperatorMetrics()
    short = LatencySamples.from_values(requests_ok=900)
    short = dataclasses.replace(
        short, blocks=(dataclasses.replace(short.blocks[0], arrivals_skipped=100),)
    )
    undecided = Measurement(GateVerdict.INCONCLUSIVE, "speedup: 10 blocks; 20 needed")
    refused = unequal_load(
        undecided, LatencySamples.from_values(requests_ok=1000), short, UnsentLimit()
    )
    assert refused.reason.startswith("shadow load saturated")
    running = with_tail_gate(analysing("tail-latency"), refused.reason, GateType.SPEEDUP)
    metrics.observe("ns", "r", analysing("acceptance"), running)
    assert saturated(metrics, "tail-latency", "candidate") == 1
    assert saturated(metrics, "tail-latency", "baseline") == 0


def test_a_deleted_rollout_leaves_no_series() -> None:
    metrics = OperatorMetrics()
    metrics.observe("ns", "r", SpecDecodeRolloutStatus(), analysing("acceptance"))
    rolled_back = analysing(None, Phase.ROLLED_BACK)
    metrics.observe("ns", "r", analysing("acceptance"), rolled_back)
    assert (
        metrics.registry.get_sample_value(
            "specdecode_rollbacks_total", {"namespace": "ns", "rollout": "r", "reason": "Unknown"}
        )
        == 1
    )
    metrics.forget("ns", "r")
    remaining = [
        sample
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.labels.get("rollout") == "r"
    ]
    assert remaining == []


def test_requests_and_reconciles_are_counted() -> None:
    metrics = OperatorMetrics()
    for verb in ("PATCH", "PATCH", "DELETE"):
        metrics.count_request(verb)
    metrics.reconciled("ok", 0.02)
    assert (
        metrics.registry.get_sample_value(
            "specdecode_operator_api_requests_total", {"verb": "PATCH"}
        )
        == 2
    )
    assert (
        metrics.registry.get_sample_value(
            "specdecode_operator_reconcile_duration_seconds_count", {"outcome": "ok"}
        )
        == 1
    )


class ScriptedElector:
    """Grants the Lease on the second poll; renewals follow `renewals`."""

    def __init__(self, renewals: list[bool]) -> None:
        self.polls, self.renewals = 0, list(renewals)
        self.leading, self.released, self.abandoned = False, False, False

    def try_acquire_or_renew(self) -> bool:
        self.polls += 1
        if not self.leading:
            self.leading = self.polls >= 2
            return self.leading
        self.leading = self.renewals.pop(0) if self.renewals else True
        return self.leading

    def abandon(self) -> None:
        self.abandoned, self.leading = True, False

    def release(self) -> None:
        self.released = not self.abandoned


SETTINGS = OperatorSettings(
    leader_election=True, lease_retry_seconds=0.01, lease_renew_seconds=0.01, metrics_port=0
)


async def test_a_leader_that_loses_the_lease_stops_and_exits() -> None:
    elector = ScriptedElector(renewals=[True, False])
    started = asyncio.Event()

    async def operator(stop_flag: asyncio.Event) -> None:
        started.set()
        await stop_flag.wait()

    leading: list[bool] = []
    run = run_when_leading(SETTINGS, elector, operator, None, leading.append)  # type: ignore[arg-type]
    code = await asyncio.wait_for(run, 5)
    assert started.is_set() and elector.polls >= 4
    assert code == 1
    assert leading == [True, False]
    assert not elector.released  # not ours any more: never released


async def test_a_leader_that_stops_releases_the_lease() -> None:
    elector: Any = ScriptedElector(renewals=[])

    async def operator(stop_flag: asyncio.Event) -> None:
        await asyncio.sleep(0.05)  # kopf returns after a SIGTERM's graceful stop

    assert await asyncio.wait_for(run_when_leading(SETTINGS, elector, operator, None), 5) == 0
    assert elector.released
