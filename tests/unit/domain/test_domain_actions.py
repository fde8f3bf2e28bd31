"""The specdecode.io/action annotation in every phase: acted on once, always cleared."""

from __future__ import annotations

import pytest
from domain_fixtures import (
    EAGLE3,
    make_spec,
    observe,
    pending,
    ready,
    run,
    shadows_ready,
    status_in,
)

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import Phase
from specdecode.domain.decision import EventType
from specdecode.domain.observations import Observations

pytestmark = pytest.mark.unit

SPEC = make_spec()
PHASES = [
    "Deploying",
    "Analyzing",
    "Paused",
    "Promoting",
    "Promoted",
    "Degraded",
    "RolledBack",
    "Failed",
]
# What each action does per phase; None = not applicable (ignored with a Warning).
EXPECTED: dict[str, dict[str, tuple[Phase, str] | None]] = {
    "promote": {
        "Deploying": (Phase.PROMOTING, "GatesOverridden"),
        "Analyzing": (Phase.PROMOTING, "GatesOverridden"),
        "Paused": (Phase.PROMOTING, "PromotionApproved"),
    },
    "abort": {
        "Deploying": (Phase.ROLLED_BACK, "Aborted"),
        "Analyzing": (Phase.ROLLED_BACK, "Aborted"),
        "Paused": (Phase.ROLLED_BACK, "Aborted"),
        "Promoting": (Phase.ROLLED_BACK, "Aborted"),
    },
    "retry": {
        "RolledBack": (Phase.DEPLOYING, "AnalysisRetried"),
        "Failed": (Phase.DEPLOYING, "AnalysisRetried"),
    },
}


def _observations_for(phase: str, action: str) -> Observations:
    # Production as the phase would see it, shadows not ready (so nothing cascades).
    production = {"Promoted": ready(EAGLE3), "Degraded": pending()}.get(phase, ready(None))
    return observe(production=production, action=action)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("action", ["promote", "abort", "retry"])
def test_action_in_phase(action: str, phase: str) -> None:
    status = status_in(SPEC, phase)
    decision = run(SPEC, status, _observations_for(phase, action), 1)
    assert decision.clear_action is True
    expected = EXPECTED[action].get(phase)
    if action == "promote" and phase == "Promoting":
        # its own echo after a restart between the status write and the clear: no Warning
        assert decision.status.phase.value == phase and decision.events == ()
        return
    if expected is None:
        assert decision.status.phase.value == phase
        assert decision.events[0].reason == "ActionIgnored"
        assert decision.events[0].type is EventType.WARNING
        assert phase in decision.events[0].message
        return
    new_phase, reason = expected
    assert decision.status.phase is new_phase
    assert decision.events[0].reason == reason


def test_unknown_action_is_cleared_with_a_warning() -> None:
    decision = run(SPEC, status_in(SPEC, "Analyzing"), shadows_ready(action="yolo"), 1)
    assert decision.clear_action is True
    assert decision.status.phase is Phase.ANALYZING
    assert decision.events[0].reason == "UnknownAction"
    assert "yolo" in decision.events[0].message


def test_no_action_is_not_cleared() -> None:
    decision = run(SPEC, status_in(SPEC, "Analyzing"), shadows_ready(), 1)
    assert decision.clear_action is False


def test_promote_mid_analysis_says_it_overrides_the_gates() -> None:
    decision = run(SPEC, status_in(SPEC, "Analyzing"), shadows_ready(action="promote"), 1)
    event = decision.events[0]
    assert "overrides the gates" in event.message
    assert decision.children.production == setting_of(EAGLE3)
    assert decision.children.shadows is False


def test_abort_keeps_production_on_stable_and_records_why() -> None:
    decision = run(SPEC, status_in(SPEC, "Analyzing"), shadows_ready(action="abort"), 1)
    assert decision.status.phase is Phase.ROLLED_BACK
    assert decision.status.verdict == "RolledBack"
    assert "aborted" in decision.status.message
    assert decision.children.production is None
    assert decision.children.shadows is False
    assert decision.traffic is None


def test_abort_while_promoting_reverts_production() -> None:
    decision = run(SPEC, status_in(SPEC, "Promoting"), observe(action="abort"), 1)
    assert decision.status.phase is Phase.ROLLED_BACK
    assert decision.children.production is None  # the stable config: plain decoding


def test_retry_analyses_the_same_config_again() -> None:
    rolled_back = status_in(SPEC, "RolledBack")
    decision = run(SPEC, rolled_back, observe(action="retry"), 1)
    assert decision.status.phase is Phase.DEPLOYING
    assert decision.status.candidate_fingerprint == rolled_back.candidate_fingerprint
    assert decision.status.verdict is None
