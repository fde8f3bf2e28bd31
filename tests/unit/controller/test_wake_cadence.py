"""The reconcile loop's next wake-up: the decision's timed event while time drives the
phase, not a fixed operator clock."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from controller_fakes import FakeCluster, FakeKube, make_runtime

from specdecode.api import Phase
from specdecode.domain.decision import Decision, DesiredChildren
from specdecode.domain.rollout_state import RolloutState
from specdecode.reconciler.apply import WAKE_SLACK_SECONDS, next_reconcile_in

pytestmark = pytest.mark.unit


def _decision(phase: Phase, wake_in: float | None, now: datetime) -> Decision:
    wake_at = None if wake_in is None else now + timedelta(seconds=wake_in)
    return Decision(
        status=RolloutState(phase=phase),
        children=DesiredChildren(production=None),
        wake_at=wake_at,
    )


def test_an_analysis_wakes_at_its_next_timed_event() -> None:
    runtime = make_runtime(FakeKube(), FakeCluster())
    now = runtime.clock.now()
    assert next_reconcile_in(runtime, _decision(Phase.ANALYZING, 7.0, now)) == pytest.approx(
        7.0 + WAKE_SLACK_SECONDS
    )
    assert next_reconcile_in(runtime, _decision(Phase.ANALYZING, 42.0, now)) == pytest.approx(
        42.0 + WAKE_SLACK_SECONDS
    )


def test_an_event_already_past_wakes_at_once_and_a_far_one_waits_no_longer_than_resync() -> None:
    runtime = make_runtime(FakeKube(), FakeCluster())
    now = runtime.clock.now()
    assert next_reconcile_in(runtime, _decision(Phase.ANALYZING, -3.0, now)) == WAKE_SLACK_SECONDS
    far = _decision(Phase.ANALYZING, 10 * runtime.settings.resync_seconds, now)
    assert next_reconcile_in(runtime, far) == runtime.settings.resync_seconds


def test_without_a_timed_event_the_operator_clock_and_the_resync_apply() -> None:
    runtime = make_runtime(FakeKube(), FakeCluster())
    now = runtime.clock.now()
    deploying = _decision(Phase.DEPLOYING, None, now)
    assert next_reconcile_in(runtime, deploying) == runtime.settings.reconcile_interval_seconds
    promoted = _decision(Phase.PROMOTED, None, now)
    assert next_reconcile_in(runtime, promoted) == runtime.settings.resync_seconds
    # Promoted with the drift guard on: its next look is a timed event like an analysis'.
    guarded = _decision(Phase.PROMOTED, 7.0, now)
    assert next_reconcile_in(runtime, guarded) == pytest.approx(7.0 + WAKE_SLACK_SECONDS)
