"""When a rollout is looked at again without any event: its loop's next delay.

The decision's next timed event when it has one (`cadence.next_timed_event`), else the
operator's clock while time drives the phase, else the slow resync; sooner while an
object in the rollout's way (no watch says when it goes) or an engine's scrape grace
(no event marks its end) needs a look.
"""

from __future__ import annotations

from specdecode.api.status import Phase
from specdecode.domain.apply_findings import not_owned_found
from specdecode.domain.decision import Decision
from specdecode.reconciler.runtime import Runtime

# Phases in which time alone can change the decision (looks, warm-ups, deadlines): the
# loop wakes at the analysis clock. Elsewhere only a change can, and a watch event says so.
CLOCKED_PHASES = frozenset({Phase.PENDING, Phase.DEPLOYING, Phase.ANALYZING, Phase.PROMOTING})
# Wake this long after a timed event: the stage's comparisons are strict (`now >
# measure_from`), and the loop's timer and the wall clock differ by a few milliseconds.
WAKE_SLACK_SECONDS = 0.1


def next_reconcile_in(runtime: Runtime, decision: Decision, key: str | None = None) -> float:
    """Seconds until the rollout must be looked at again without any event.

    The decision's next timed event when it has one (an analysis: its next look, warm-up
    or duration end; Promoted: the drift guard's next look; `cadence.next_timed_event`),
    else, while time drives the phase, the operator's clock (`reconcile_interval_seconds`).
    The slow resync otherwise, which only repairs what a missed watch event could have
    hidden. A rollout (`key`) with an object named like a child that it does not own: at
    least at the operator's clock (no watch event says when that object goes).
    The scrape check's next instant (`reconciler.engine_metrics`): at it, whatever the
    phase (no event marks a grace's end).
    """
    settings = runtime.settings
    if decision.wake_at is not None:  # an analysis' next look, or the drift guard's
        until = (decision.wake_at - runtime.clock.now()).total_seconds()
        wait = min(max(until, 0.0) + WAKE_SLACK_SECONDS, settings.resync_seconds)
    elif decision.status.phase in CLOCKED_PHASES:
        wait = settings.reconcile_interval_seconds
    else:
        wait = settings.resync_seconds
    if not_owned_found(decision.status):
        wait = min(wait, settings.reconcile_interval_seconds)
    check = runtime.engine_series_memory.next_check(key) if key is not None else None
    if check is not None:  # an engine's scrape grace ends, or a missing series is re-asked
        until = (check - runtime.clock.now()).total_seconds()
        wait = min(wait, max(until, 0.0) + WAKE_SLACK_SECONDS)
    return wait
