"""The scrape check inside a reconcile: silent until the grace ends (the loop wakes then),
one query, Degraded MetricsUnavailable while series are missing, none once seen."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from controller_fakes import (
    EAGLE3,
    NAME,
    NAMESPACE,
    T0,
    UID,
    FakeClock,
    FakeCluster,
    FakeKube,
    make_runtime,
    raw_spec,
)

from specdecode.api import Phase, SpecDecodeRolloutSpec
from specdecode.api.status import ConditionStatus
from specdecode.domain.conditions import DEGRADED
from specdecode.domain.decision import Decision
from specdecode.domain.observations import MetricError, Observations
from specdecode.domain.pass_decision import Seen, decide_pass
from specdecode.domain.rollout_state import RolloutState
from specdecode.reconciler.analysis_boundary import plan_of
from specdecode.reconciler.apply import WAKE_SLACK_SECONDS, RolloutRef, next_reconcile_in
from specdecode.reconciler.engine_metrics import log_prometheus_reach, observe_engine_scrape
from specdecode.reconciler.guard_boundary import guard_plan_of
from specdecode.reconciler.rollout_boundary import settings_of
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.spec_boundary import stage_needs_of

pytestmark = pytest.mark.unit

PODS = (f"{NAME}-baseline-1-a", f"{NAME}-candidate-1-b")
REF = RolloutRef(NAMESPACE, NAME, UID, 1, resource_version="1")


class Answers:
    url = "http://p:9090"

    def __init__(self, *answers: frozenset[str] | MetricError) -> None:
        self.answers = list(answers)
        self.asked = 0

    async def pods_with_series(
        self, namespace: str, pods: Sequence[str]
    ) -> frozenset[str] | MetricError:
        self.asked += 1
        return self.answers.pop(0)

    async def engine_series_count(self) -> int | MetricError:
        return 0


def _pod(name: str, role: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"specdecode.io/rollout": NAME, "specdecode.io/role": role},
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T12:00:00Z"}
            ]
        },
    }


async def _checked(runtime: Runtime, spec: SpecDecodeRolloutSpec, old: RolloutState) -> Decision:
    """Observe the scrape (as `reconciler.observe` does), decide as production does
    (`decide_pass`); the decision's own next look is set an hour away, so a wake found
    sooner is the scrape check's."""
    scrape = await observe_engine_scrape(runtime, REF, stage_needs_of(spec))
    settings = settings_of(spec, old.candidate_speculative)
    observations = Observations(1, plan=plan_of(spec), guard=guard_plan_of(spec), settings=settings)
    seen = Seen(old, 1, observations, engine_scrape=scrape)
    decision = decide_pass(seen, runtime.clock.now())
    return replace(decision, wake_at=T0 + timedelta(hours=1))


def _degraded(decision: Decision) -> str | None:
    found = next((c for c in decision.status.conditions if c.type == DEGRADED), None)
    return found.reason if found and found.status is ConditionStatus.TRUE else None


async def test_the_check_waits_for_the_grace_then_asks_once_and_clears_when_series_appear() -> None:
    clock, cluster = FakeClock(), FakeCluster()
    runtime = make_runtime(FakeKube(), cluster, clock, reconcile_interval_seconds=5.0)
    source = Answers(frozenset(), frozenset(PODS))
    runtime.engine_series = source
    cluster.indexes["pods"][(NAMESPACE, NAME)] = [
        _pod(PODS[0], "baseline"),
        _pod(PODS[1], "candidate"),
    ]
    spec = SpecDecodeRolloutSpec.model_validate(raw_spec(EAGLE3))
    old = RolloutState(phase=Phase.ANALYZING)

    async def check(at: float) -> Decision:
        clock.current = T0 + timedelta(seconds=at)
        return await _checked(runtime, spec, old)

    early = await check(10)
    assert _degraded(early) is None and source.asked == 0
    # nothing else would wake an analysis with its next look an hour away: the grace does
    wait = next_reconcile_in(runtime, early, REF.key)
    assert wait == pytest.approx(25 + WAKE_SLACK_SECONDS)

    missing = await check(35)
    assert _degraded(missing) == "MetricsUnavailable" and source.asked == 1
    assert next_reconcile_in(runtime, missing, REF.key) == pytest.approx(15 + WAKE_SLACK_SECONDS)
    assert _degraded(await check(40)) == "MetricsUnavailable" and source.asked == 1

    seen = await check(50)
    assert _degraded(seen) is None and source.asked == 2
    assert _degraded(await check(600)) is None and source.asked == 2  # never asked again
    # seen: the check adds no wake (the resync caps the far look)
    assert next_reconcile_in(runtime, seen, REF.key) == runtime.settings.resync_seconds


async def test_a_zero_grace_turns_the_check_off() -> None:
    clock, cluster = FakeClock(), FakeCluster()
    runtime = make_runtime(FakeKube(), cluster, clock, engine_scrape_grace_seconds=0.0)
    source = Answers()
    runtime.engine_series = source
    cluster.indexes["pods"][(NAMESPACE, NAME)] = [_pod(PODS[0], "baseline")]
    spec = SpecDecodeRolloutSpec.model_validate(raw_spec(EAGLE3))
    clock.current = T0 + timedelta(seconds=100)
    checked = await _checked(runtime, spec, old_status())
    assert _degraded(checked) is None and source.asked == 0
    assert runtime.engine_series_memory.next_check(REF.key) is None


def old_status() -> RolloutState:
    return RolloutState(phase=Phase.ANALYZING)


class Counted(Answers):
    def __init__(self, count: int | MetricError) -> None:
        super().__init__()
        self.count = count

    async def engine_series_count(self) -> int | MetricError:
        return self.count


async def test_one_start_up_line_and_a_warning_when_prometheus_does_not_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime = make_runtime(FakeKube(), FakeCluster())
    caplog.set_level(logging.INFO, logger="specdecode.metrics")
    runtime.engine_series = Counted(3)
    await log_prometheus_reach(runtime)
    runtime.engine_series = Counted(MetricError(source="p", message="connection refused"))
    await log_prometheus_reach(runtime)
    (info, warning) = caplog.records
    assert info.levelno == logging.INFO and "holds 3 vLLM engine series" in info.getMessage()
    assert warning.levelno == logging.WARNING
    assert "does not answer (connection refused)" in warning.getMessage()
