"""The rollout state machine, phase by phase and input by input (table-driven)."""

from __future__ import annotations

import pytest
from domain_fixtures import (
    CRASH,
    EAGLE3,
    GPU_FULL,
    NGRAM,
    T0,
    make_spec,
    observe,
    pending,
    ready,
    run,
    shadows_ready,
    status_in,
)

from specdecode.api import Phase
from specdecode.domain.decision import EventType
from specdecode.domain.observations import Observations

pytestmark = pytest.mark.unit

SPEC = make_spec()

# (case, starting phase, observations, seconds after the phase began, expected phase, reason)
TABLE: list[tuple[str, str, Observations, float, Phase, str | None]] = [
    (
        "deploying, shadows starting",
        "Deploying",
        observe(candidate=pending()),
        60,
        Phase.DEPLOYING,
        "AnalysisStarted",
    ),
    ("deploying, both ready", "Deploying", shadows_ready(), 60, Phase.ANALYZING, "ShadowsReady"),
    (
        "deploying, candidate on an old config",
        "Deploying",
        shadows_ready(candidate=NGRAM),
        60,
        Phase.DEPLOYING,
        "AnalysisStarted",
    ),
    (
        "deploying, candidate crashes",
        "Deploying",
        observe(candidate=pending(crash=CRASH)),
        60,
        Phase.ROLLED_BACK,
        "CandidateCrashed",
    ),
    (
        "deploying, baseline crashes",
        "Deploying",
        observe(baseline=pending(crash=CRASH), candidate=ready(EAGLE3)),
        60,
        Phase.ROLLED_BACK,
        "BaselineFailed",
    ),
    (
        "deploying, GPU pool full past deadline",
        "Deploying",
        observe(candidate=pending(GPU_FULL)),
        601,
        Phase.ROLLED_BACK,
        "ProgressDeadlineExceeded",
    ),
    (
        "deploying, GPU pool full before deadline",
        "Deploying",
        observe(candidate=pending(GPU_FULL)),
        599,
        Phase.DEPLOYING,
        "AnalysisStarted",
    ),
    (
        "deploying, prompts missing",
        "Deploying",
        observe(traffic_error="configmap prompts not found"),
        5,
        Phase.FAILED,
        "TrafficSourceInvalid",
    ),
    ("analyzing, warming up", "Analyzing", shadows_ready(), 10, Phase.ANALYZING, "ShadowsReady"),
    (
        "analyzing, candidate crashes",
        "Analyzing",
        shadows_ready(candidate_state=pending(crash=CRASH)),
        10,
        Phase.ROLLED_BACK,
        "CandidateCrashed",
    ),
    (
        "analyzing, prompts invalid",
        "Analyzing",
        shadows_ready(traffic_error="line 3: not JSON"),
        10,
        Phase.FAILED,
        "TrafficSourceInvalid",
    ),
    ("paused, waits", "Paused", shadows_ready(), 3600, Phase.PAUSED, "ShadowsReady"),
    (
        "paused, candidate crashes",
        "Paused",
        shadows_ready(candidate_state=pending(crash=CRASH)),
        10,
        Phase.ROLLED_BACK,
        "CandidateCrashed",
    ),
    (
        "promoting, production rolling",
        "Promoting",
        observe(production=pending()),
        60,
        Phase.PROMOTING,
        "GatesOverridden",
    ),
    (
        "promoting, production still on stable",
        "Promoting",
        observe(production=ready(None)),
        60,
        Phase.PROMOTING,
        "GatesOverridden",
    ),
    (
        "promoting, production ready on candidate",
        "Promoting",
        observe(production=ready(EAGLE3)),
        60,
        Phase.PROMOTED,
        "Promoted",
    ),
    (
        "promoting, past deadline",
        "Promoting",
        observe(production=pending(GPU_FULL)),
        601,
        Phase.ROLLED_BACK,
        "PromotionFailed",
    ),
    (
        "promoted, production ready",
        "Promoted",
        observe(production=ready(EAGLE3)),
        10_000,
        Phase.PROMOTED,
        "Promoted",
    ),
    (
        "degraded, production back",
        "Degraded",
        observe(production=ready(EAGLE3)),
        10,
        Phase.PROMOTED,
        "ProductionRecovered",
    ),
    (
        "degraded, production still down",
        "Degraded",
        observe(production=pending()),
        10,
        Phase.DEGRADED,
        "ProductionUnavailable",
    ),
    (
        "rolled back, stays",
        "RolledBack",
        observe(production=ready(None)),
        10_000,
        Phase.ROLLED_BACK,
        "Aborted",
    ),
    (
        "failed, same generation",
        "Failed",
        observe(production=ready(None)),
        60,
        Phase.FAILED,
        "TrafficSourceInvalid",
    ),
    (
        "failed, new generation",
        "Failed",
        observe(generation=2, production=ready(None)),
        60,
        Phase.DEPLOYING,
        "SpecChanged",
    ),
]


@pytest.mark.parametrize(
    ("start", "observations", "seconds", "phase", "reason"),
    [case[1:] for case in TABLE],
    ids=[case[0] for case in TABLE],
)
def test_transition(
    start: str, observations: Observations, seconds: float, phase: Phase, reason: str | None
) -> None:
    status = status_in(SPEC, start)
    began = status.phase_since or T0
    now_seconds = (began - T0).total_seconds() + seconds
    decision = run(SPEC, status, observations, now_seconds)
    assert decision.status.phase is phase
    assert decision.status.reason == reason
    assert decision.status.observed_generation == observations.generation
    changed = phase.value != start
    assert len(decision.events) == (1 if changed else 0)
    if changed and phase in (Phase.ROLLED_BACK, Phase.FAILED):
        assert decision.events[0].type is EventType.WARNING
        assert decision.children.shadows is False
        assert decision.children.production is None  # production keeps the stable config


@pytest.mark.parametrize(
    ("start", "observations", "message"),
    [
        (
            "Deploying",
            observe(candidate=pending(GPU_FULL)),
            f"shadows not ready after 600s: baseline: not created; candidate: unschedulable: "
            f"{GPU_FULL}",
        ),
        (
            "Promoting",
            observe(production=pending(GPU_FULL)),
            f"production not ready on the candidate after 600s (production: unschedulable: "
            f"{GPU_FULL}); reverting",
        ),
    ],
    ids=["deploying", "promoting"],
)
def test_past_the_deadline_the_rollback_names_what_never_became_ready(
    start: str, observations: Observations, message: str
) -> None:
    """Deploying and Promoting share one deadline rule (`phases._waiting`); each names what
    it waited for, so on call knows which Deployment to look at."""
    status = status_in(SPEC, start)
    began = status.phase_since or T0
    decision = run(SPEC, status, observations, (began - T0).total_seconds() + 601)
    assert decision.status.phase is Phase.ROLLED_BACK
    assert decision.status.message == message
    assert decision.events[0].message == message
