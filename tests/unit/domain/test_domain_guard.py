"""After promotion the guard judges production's acceptance: Drifted (condition, one Warning
Event), optionally a rollback to the previous stable config, and no change at all (so no
status write) while nothing drifts or the data are missing."""

from __future__ import annotations

from typing import Any

import pytest
from domain_fixtures import EAGLE3, at, make_spec, observe, ready, run, status_in, timed_event

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import Phase, SpecDecodeRolloutSpec
from specdecode.api.guard import DriftAction, GuardSpec
from specdecode.api.status import ConditionStatus
from specdecode.domain.decision import Decision, EventType
from specdecode.domain.drift import AcceptanceBlock, ProductionAcceptance
from specdecode.domain.observations import MetricError
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.transitions import promoted

pytestmark = pytest.mark.unit

FIRST_LOOK = 300.0  # guard defaults: every 300 s in windows of 900 s from the promotion


def _spec(**guard: Any) -> SpecDecodeRolloutSpec:
    return make_spec().model_copy(update={"guard": GuardSpec(**guard)})


def _blocks(alpha: float, count: int = 10, spread: float = 0.01) -> tuple[AcceptanceBlock, ...]:
    return tuple(
        AcceptanceBlock(3000.0, 3000.0 * (alpha + (spread if i % 2 else -spread)))
        for i in range(count)
    )


def _promoted(spec: SpecDecodeRolloutSpec) -> RolloutState:
    """Promoted at t=0 from plain decoding (the fixture's analysis gates minAlpha 0.55)."""
    status = status_in(spec, "Promoted")
    assert status.phase is Phase.PROMOTED and status.stable_speculative == setting_of(EAGLE3)
    return run(spec, status, observe(production=ready(EAGLE3)), 1).status  # settled


def _look(
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    seconds: float,
    observed: Any,
    production: Any = EAGLE3,
) -> Decision:
    return run(
        spec, status, observe(production=ready(production), production_acceptance=observed), seconds
    )


def test_a_drift_is_a_condition_and_one_warning_event_and_production_keeps_its_config() -> None:
    spec = _spec()
    status = _promoted(spec)
    observed = ProductionAcceptance(at(FIRST_LOOK), _blocks(0.3))
    decision = _look(spec, status, FIRST_LOOK, observed)
    assert decision.status.phase is Phase.PROMOTED
    assert decision.children.production == setting_of(EAGLE3)
    drift = decision.status.drift
    assert drift is not None and drift.threshold == 0.55 and drift.upper_bound < 0.55
    assert [(e.reason, e.type) for e in decision.events] == [("Drifted", EventType.WARNING)]
    condition = next(c for c in decision.status.conditions if c.type == "Drifted")
    assert condition.status is ConditionStatus.TRUE and condition.reason == "AcceptanceDrifted"
    assert "0.300" in condition.message and "minAlpha 0.55" in condition.message
    # The same look again, and the next look still drifted: nothing new to say or write.
    again = _look(spec, decision.status, FIRST_LOOK + 5, observed)
    later = _look(spec, again.status, 600, ProductionAcceptance(at(600), _blocks(0.3, 20)))
    assert again.events == () and later.events == ()
    assert later.status == decision.status


@pytest.mark.parametrize(
    "observed",
    [
        None,  # no look due
        ProductionAcceptance(at(FIRST_LOOK), _blocks(0.7)),  # healthy
        ProductionAcceptance(at(FIRST_LOOK), _blocks(0.54, spread=0.1)),  # straddles: no verdict
        ProductionAcceptance(at(FIRST_LOOK), _blocks(0.3, count=3)),  # too few blocks
        ProductionAcceptance(at(FIRST_LOOK), ()),  # no counters (no traffic)
        ProductionAcceptance(at(FIRST_LOOK - 1), _blocks(0.3)),  # not this look's window
        MetricError("prometheus", "timeout"),
    ],
)
def test_nothing_changes_while_nothing_drifts_or_data_are_missing(observed: Any) -> None:
    spec = _spec()
    status = _promoted(spec)
    decision = _look(spec, status, FIRST_LOOK, observed)
    assert decision.status == status
    assert decision.events == ()


def test_a_disabled_guard_judges_nothing_and_sets_no_timer() -> None:
    spec = _spec(enabled=False)
    status = _promoted(spec)
    decision = _look(spec, status, FIRST_LOOK, ProductionAcceptance(at(FIRST_LOOK), _blocks(0.1)))
    assert decision.status == status
    assert timed_event(spec, status, at(10)) is None


def test_the_guard_wakes_the_loop_on_its_grid_only_while_promoted_on_a_speculative_config() -> None:
    spec = _spec(interval_seconds=60, window_seconds=180)
    status = _promoted(spec)
    assert timed_event(spec, status, at(10)) == at(60)
    assert timed_event(spec, status, at(180)) == at(240)
    plain = status.model_copy(update={"stable_speculative": None})
    assert timed_event(spec, plain, at(10)) is None


def test_rollback_returns_production_to_the_previous_config_and_does_not_restart() -> None:
    spec = _spec(on_drift=DriftAction.ROLLBACK)
    status = _promoted(spec)
    assert status.previous_stable_speculative is None  # promoted from plain decoding
    observed = ProductionAcceptance(at(FIRST_LOOK), _blocks(0.2))
    decision = _look(spec, status, FIRST_LOOK, observed)
    assert decision.status.phase is Phase.ROLLED_BACK
    assert decision.status.reason == "Drifted"
    assert decision.status.stable_speculative is None
    assert decision.children.production is None  # plain decoding again
    assert [(e.reason, e.type) for e in decision.events] == [("Drifted", EventType.WARNING)]
    # Production rolls back; later reconciles (same spec) stay put: no new analysis loop.
    after = _look(spec, decision.status, FIRST_LOOK + 60, None, production=None)
    assert after.status.phase is Phase.ROLLED_BACK and after.events == ()
    assert after.status.candidate_fingerprint == decision.status.candidate_fingerprint
    assert after.children.production is None and not after.children.shadows


def test_a_later_window_surely_above_the_threshold_clears_the_drift() -> None:
    spec = _spec()
    status = _promoted(spec)
    drifted = _look(spec, status, FIRST_LOOK, ProductionAcceptance(at(FIRST_LOOK), _blocks(0.3)))
    recovered = _look(spec, drifted.status, 1200, ProductionAcceptance(at(1200), _blocks(0.8)))
    assert recovered.status.drift is None
    assert [e.reason for e in recovered.events] == ["DriftRecovered"]
    assert all(c.type != "Drifted" for c in recovered.status.conditions)


def test_a_promotion_remembers_the_config_it_replaced() -> None:
    status = _promoted(_spec()).model_copy(update={"candidate_speculative": None})
    after = promoted(status, at(5), "Promoted", "production runs plain decoding").status
    assert after.stable_speculative is None
    assert after.previous_stable_speculative == setting_of(EAGLE3)


def test_switching_to_rollback_while_drifted_rolls_back_at_the_next_drifted_look() -> None:
    spec = _spec()
    status = _promoted(spec)
    alerted = _look(spec, status, FIRST_LOOK, ProductionAcceptance(at(FIRST_LOOK), _blocks(0.3)))
    escalated = _spec(on_drift=DriftAction.ROLLBACK)
    decision = _look(escalated, alerted.status, 600, ProductionAcceptance(at(600), _blocks(0.3)))
    assert decision.status.phase is Phase.ROLLED_BACK and decision.status.reason == "Drifted"
    assert [e.reason for e in decision.events] == ["Drifted"]


def test_a_drift_of_the_config_that_was_there_before_is_reported_not_rolled_back_to_itself() -> (
    None
):
    """Git reverted to the config before the promotion (UpToDate), then it drifted: there is
    nothing earlier to return to, so Rollback only reports (no RolledBack to itself)."""
    spec = _spec(on_drift=DriftAction.ROLLBACK)
    status = _promoted(spec).model_copy(update={"previous_stable_speculative": setting_of(EAGLE3)})
    observed = ProductionAcceptance(at(FIRST_LOOK), _blocks(0.2))
    decision = _look(spec, status, FIRST_LOOK, observed)
    assert decision.status.phase is Phase.PROMOTED and decision.children.production == setting_of(
        EAGLE3
    )
    assert decision.status.drift is not None
    assert "no rollback" in decision.status.drift.message


def test_a_drift_is_cleared_when_the_guard_is_turned_off() -> None:
    """Nothing could clear it otherwise: the Drifted condition (and its alert) would stay."""
    spec = _spec()
    status = _promoted(spec)
    drifted = _look(spec, status, FIRST_LOOK, ProductionAcceptance(at(FIRST_LOOK), _blocks(0.3)))
    assert drifted.status.drift is not None
    off = _spec(enabled=False)
    cleared = _look(off, drifted.status, FIRST_LOOK + 5, None)
    assert cleared.status.drift is None and [e.reason for e in cleared.events] == ["DriftCleared"]
    assert all(c.type != "Drifted" or c.status is not ConditionStatus.TRUE
               for c in cleared.status.conditions)  # fmt: skip
    assert _look(off, cleared.status, FIRST_LOOK + 10, None).status == cleared.status


def test_reanalyze_falls_back_to_plain_decoding_and_judges_the_config_again() -> None:
    spec = _spec(on_drift=DriftAction.REANALYZE)
    status = _promoted(spec)
    observed = ProductionAcceptance(at(FIRST_LOOK), _blocks(0.2))
    decision = _look(spec, status, FIRST_LOOK, observed)
    final = decision.status
    assert final.phase is Phase.DEPLOYING
    assert final.stable_speculative is None and final.candidate_speculative == setting_of(EAGLE3)
    assert final.previous_stable_speculative == setting_of(EAGLE3)
    assert final.drift is not None and "analysed again" in final.drift.message
    assert decision.children.production is None  # plain decoding meanwhile
    assert (decision.children.baseline, decision.children.candidate) == (None, setting_of(EAGLE3))
    assert [(e.reason, e.type) for e in decision.events][:1] == [("Drifted", EventType.WARNING)]
    assert "Reanalysis" in [e.reason for e in decision.events]
    # the analysis runs its stages; passing promotes the config again and clears the drift
    analysing = run(
        spec,
        final,
        observe(production=ready(None), baseline=ready(None), candidate=ready(EAGLE3)),
        FIRST_LOOK + 10,
    ).status
    assert analysing.phase is Phase.ANALYZING
    passed = run(
        spec,
        analysing,
        observe(
            production=ready(None), baseline=ready(None), candidate=ready(EAGLE3), action="promote"
        ),
        FIRST_LOOK + 20,
    ).status
    again = run(spec, passed, observe(production=ready(EAGLE3)), FIRST_LOOK + 30).status
    assert again.phase is Phase.PROMOTED and again.stable_speculative == setting_of(EAGLE3)
    assert again.drift is None
    # it drifts again after the re-analysis promoted it: off for good, no cycle
    next_look = FIRST_LOOK + 30 + 300
    observed = ProductionAcceptance(at(next_look), _blocks(0.2))
    settled = run(spec, again, observe(production=ready(EAGLE3)), FIRST_LOOK + 31).status
    second = _look(spec, settled, next_look, observed)
    assert second.status.phase is Phase.ROLLED_BACK, second.status
    assert second.status.reason == "DriftedAgain"
    assert second.children.production is None and not second.children.shadows
