"""What the world should look like for a status: children and shadow traffic.

Both are functions of the final status alone (plus the spec), so applying them twice
is harmless and a restarted operator converges to the same place.
"""

from __future__ import annotations

from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.decision import DesiredChildren, TrafficPlan
from specdecode.domain.load_sizing import size_load
from specdecode.vocabulary import Phase, StagePhase

WITH_SHADOWS = frozenset({Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED})


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
    traffic = spec.analysis.traffic
    return TrafficPlan(
        stage_name=stage_spec.name,
        candidate_fingerprint=status.candidate_fingerprint,
        concurrency=stage_spec.concurrency,
        request_rate=stage_spec.request_rate,
        started_at=stage.started_at,
        shape=size_load(
            traffic.load_generator,
            stage_spec.concurrency,
            stage_spec.request_rate,
            traffic.max_tokens,
        ),
    )
