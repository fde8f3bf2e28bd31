"""When time alone next changes an analysis: the wake-up of the rollout's reconcile loop.

Why: looks and stage durations end at instants of the rollout's own clock; waking on a
fixed operator clock would shift the looks and waste reconciles. Everything else that
changes a decision arrives as a watch event. More: docs/internals.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from specdecode.domain.analysis_plan import AnalysisPlan
from specdecode.domain.guard_model import GuardPlan
from specdecode.domain.guarding import guard_grid
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.stages import last_evaluated
from specdecode.domain.transitions import guard_state
from specdecode.vocabulary import Phase


def next_timed_event(
    plan: AnalysisPlan,
    guard: GuardPlan,
    status: RolloutState,
    now: datetime,
) -> datetime | None:
    """The first instant after `now` at which the rollout must be decided again, by the
    spec's analysis (`plan`) and guard (`guard`) as observe built them.

    Promoted with the guard on: its next look (`guarding.guard_grid`).

    The candidates: the end of the current stage's warm-up, its next look (an interval
    after the last one, or the end of the warm-up if it has not looked yet) and the ends
    of its minimum and maximum durations. A candidate at or before `now` has been acted
    on by the decision just made (a look due now was taken). None when the phase is not
    Analyzing, the stage has not started, or nothing is left: the caller keeps its own
    clock then.
    """
    grid = guard_grid(
        guard_state(status), guard.enabled, guard.interval_seconds, guard.window_seconds
    )
    if grid is not None:  # Promoted: the guard's next look (slow; none while disabled)
        return grid.next_after(now)
    index = status.current_stage_index
    if status.phase is not Phase.ANALYZING or index is None:
        return None
    if index >= len(status.stages) or index >= len(plan.stages):
        return None
    stage, stage_plan = status.stages[index], plan.stages[index]
    start = stage.measure_from
    if start is None:
        return None
    last_look = last_evaluated(stage)
    interval = _seconds(plan.interval_seconds)
    if last_look is not None:
        next_look = last_look + interval
    elif start > now:
        next_look = start
    else:
        # Measuring, yet no look recorded (nothing to judge yet, e.g. the load pods had no
        # whole block): try again an interval on, not only at the minimum duration.
        next_look = now + interval
    candidates = (
        start,
        next_look,
        start + _seconds(stage_plan.min_duration_seconds),
        start + _seconds(stage_plan.max_duration_seconds),
    )
    future = [instant for instant in candidates if instant > now]
    return min(future) if future else None


def _seconds(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)
