"""What the world should look like for a status: children, shadow traffic, next look.

All three are functions of the final status alone (plus the spec), so applying them twice
is harmless and a restarted operator converges to the same place.
"""

from __future__ import annotations

from datetime import datetime

from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.status import Phase, SpecDecodeRolloutStatus, StagePhase
from specdecode.domain.conditions import READY, production_unready_since
from specdecode.domain.decision import DesiredChildren, TrafficPlan
from specdecode.domain.stages import seconds_until_next_look

WITH_SHADOWS = frozenset({Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED})
ROLLING_SECONDS = 5.0  # Deploying / Promoting / Pending: check again soon
DEGRADED_SECONDS = 30.0


def desired_children(
    spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus
) -> DesiredChildren:
    """Production always; shadows while an analysis runs; production on the candidate while
    Promoting; the live canary only during a live-canary stage."""
    stable = status.stable_speculative
    if status.phase is Phase.PROMOTING:
        return DesiredChildren(production=status.candidate_speculative)
    if status.phase in WITH_SHADOWS:
        return DesiredChildren(
            production=stable,
            shadows=True,
            baseline=stable,
            candidate=status.candidate_speculative,
            live_canary=_live_canary(spec, status),
        )
    return DesiredChildren(production=stable)


def _live_canary(spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus) -> bool:
    index = status.current_stage_index
    if status.phase is not Phase.ANALYZING or index is None:
        return False
    return spec.analysis.stages[index].live_canary


def traffic_plan(
    spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus
) -> TrafficPlan | None:
    """Shadow load while a stage is warming up or measuring; none otherwise."""
    index = status.current_stage_index
    if status.phase is not Phase.ANALYZING or index is None or status.candidate_fingerprint is None:
        return None
    stage = status.stages[index]
    if stage.phase not in (StagePhase.WARMING_UP, StagePhase.RUNNING):
        return None
    stage_spec = spec.analysis.stages[index]
    return TrafficPlan(
        stage_name=stage_spec.name,
        candidate_fingerprint=status.candidate_fingerprint,
        concurrency=stage_spec.concurrency,
        request_rate=stage_spec.request_rate,
    )


def requeue_after(
    spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus, now: datetime
) -> float | None:
    """When to reconcile again without a change: gates' interval while Analyzing, a few
    seconds while rolling, the end of the grace period while production is down, else never."""
    phase = status.phase
    if phase is Phase.ANALYZING and status.current_stage_index is not None:
        stage = status.stages[status.current_stage_index]
        return seconds_until_next_look(stage, spec.analysis.interval_seconds, now)
    if phase in (Phase.PENDING, Phase.DEPLOYING, Phase.PROMOTING):
        return ROLLING_SECONDS
    if phase is Phase.DEGRADED:
        return DEGRADED_SECONDS
    if phase is Phase.PROMOTED:
        ready = next((c for c in status.conditions if c.type == READY), None)
        if ready is not None and ready.status.value == "True":
            return None
        grace = spec.analysis.progress_deadline_seconds
        waited = (now - production_unready_since(status, now)).total_seconds()
        return max(ROLLING_SECONDS, grace - waited + 1.0)
    return None
