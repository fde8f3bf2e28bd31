"""The loop wakes when time alone changes an analysis: at each look's interval, at the end
of a warm-up and of the minimum and maximum durations, never on a fixed operator clock."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import datetime

import pytest
from domain_fixtures import (
    T0,
    acceptance,
    acceptance_stage,
    analyzing,
    at,
    make_spec,
    observe,
    run,
    shadows_ready,
    stage_obs,
    status_in,
    timed_event,
)

from specdecode.api import Phase, SpecDecodeRolloutSpec
from specdecode.domain.stages import last_evaluated

pytestmark = pytest.mark.unit

# Too few draft tokens for a verdict: every look is taken and none decides the stage.
UNDECIDED = shadows_ready(stage=stage_obs("acceptance", acceptance(0.6, drafts=50, requests=5)))
SLACK = 0.1  # what the reconcile loop adds to each wake-up (reconciler.apply)


def _look_times(
    spec: SpecDecodeRolloutSpec, wake: Callable[[float, datetime | None], float], until: float
) -> tuple[list[float], list[float]]:
    """Run the analysis from t = 0, waking as `wake(now, timed_event)` says; return the
    seconds of every reconcile and of every look."""
    status, now = analyzing(spec), 0.0
    reconciles, looks = [], []
    while now < until and status.phase is Phase.ANALYZING:
        before = last_evaluated(status.stages[0])
        status = run(spec, status, UNDECIDED, now).status
        reconciles.append(now)
        if last_evaluated(status.stages[0]) != before:
            looks.append(now)
        now = wake(now, timed_event(spec, status, at(now)))
    return reconciles, looks


def _timed(now: float, event: datetime | None) -> float:
    assert event is not None
    return (event - T0).total_seconds() + SLACK


def _fixed_clock(now: float, _: datetime | None) -> float:
    return now + 5.0  # the operator's reconcile interval: what the loop did before


def test_looks_come_every_interval_and_nothing_wakes_the_loop_in_between() -> None:
    spec = make_spec(stages=[acceptance_stage(max_duration_seconds=300)], interval_seconds=7)
    reconciles, looks = _look_times(spec, _timed, until=100)
    gaps = [later - earlier for earlier, later in itertools.pairwise(looks)]
    assert looks[0] == pytest.approx(30 + SLACK)  # the end of the warm-up
    assert len(gaps) >= 8 and all(7 <= gap <= 7 + 2 * SLACK for gap in gaps), gaps
    # Besides the looks, only the warm-up and minimum-duration ends wake the loop.
    assert len(reconciles) - len(looks) <= 2, (reconciles, looks)


def test_control_a_fixed_five_second_clock_stretches_a_seven_second_interval() -> None:
    spec = make_spec(stages=[acceptance_stage(max_duration_seconds=300)], interval_seconds=7)
    reconciles, looks = _look_times(spec, _fixed_clock, until=100)
    gaps = [later - earlier for earlier, later in itertools.pairwise(looks)]
    assert set(gaps) == {10.0}
    assert len(reconciles) > len(looks) * 2 - 1


def test_a_short_interval_is_honoured() -> None:
    spec = make_spec(stages=[acceptance_stage(max_duration_seconds=300)], interval_seconds=1)
    _, looks = _look_times(spec, _timed, until=40)
    assert len(looks) >= 9  # 30.1 .. 40: one look a second, not one every 5 s


def test_first_wake_is_the_end_of_the_warm_up() -> None:
    spec = make_spec()
    status = analyzing(spec)
    assert timed_event(spec, status, at(1)) == at(30)


def test_the_minimum_and_maximum_durations_wake_the_loop_between_looks() -> None:
    spec = make_spec(
        stages=[acceptance_stage(min_duration_seconds=61, max_duration_seconds=95)],
        interval_seconds=600,
    )
    status = run(spec, analyzing(spec), UNDECIDED, 31).status  # first look at 31
    assert timed_event(spec, status, at(31)) == at(30 + 61)
    assert timed_event(spec, status, at(91)) == at(30 + 95)


def test_no_timed_event_outside_analyzing() -> None:
    spec = make_spec()
    deploying = run(spec, status_in(spec, "Deploying"), observe(), 0).status
    assert deploying.phase is Phase.DEPLOYING
    assert timed_event(spec, deploying, at(0)) is None


def test_a_stage_with_nothing_to_judge_yet_is_looked_at_again_an_interval_on() -> None:
    """The load pods may have no whole block at the end of the warm-up: no look is
    recorded then, and the next must come an interval later, not at the minimum duration
    (which left status without load figures until the verdict)."""
    spec = make_spec(
        stages=[acceptance_stage(min_duration_seconds=60, max_duration_seconds=300)],
        interval_seconds=3,
    )
    status = analyzing(spec)
    assert last_evaluated(status.stages[0]) is None
    assert timed_event(spec, status, at(31)) == at(34)
