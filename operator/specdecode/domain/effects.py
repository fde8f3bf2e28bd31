"""What the world should look like for a status: children and shadow traffic.

Both are functions of the final status alone (plus the spec's analysis as the domain reads
it, `AnalysisPlan`), so applying them twice is harmless and a restarted operator converges
to the same place.
"""

from __future__ import annotations

from specdecode.domain.analysis_plan import AnalysisPlan
from specdecode.domain.decision import DesiredChildren, TrafficPlan
from specdecode.domain.rollout_state import RolloutState
from specdecode.vocabulary import Phase, StagePhase

WITH_SHADOWS = frozenset({Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED})


def desired_children(plan: AnalysisPlan, status: RolloutState) -> DesiredChildren:
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
            live_canary=_live_canary(plan, status),
        )
    return DesiredChildren(production=stable)


def _live_canary(plan: AnalysisPlan, status: RolloutState) -> bool:
    index = status.current_stage_index
    if status.phase is not Phase.ANALYZING or index is None:
        return False
    return plan.stages[index].live_canary


def traffic_plan(plan: AnalysisPlan, status: RolloutState) -> TrafficPlan | None:
    """Shadow load while a stage is warming up or measuring; none otherwise."""
    index = status.current_stage_index
    if status.phase is not Phase.ANALYZING or index is None:
        return None
    if status.candidate_fingerprint is None:
        return None
    stage = status.stages[index]
    if stage.phase not in (StagePhase.WARMING_UP, StagePhase.RUNNING):
        return None
    stage_plan = plan.stages[index]
    return TrafficPlan(
        stage_name=stage_plan.name,
        candidate_fingerprint=status.candidate_fingerprint,
        concurrency=stage_plan.concurrency,
        request_rate=stage_plan.request_rate,
        started_at=stage.started_at,
        shape=stage_plan.shape,
    )
