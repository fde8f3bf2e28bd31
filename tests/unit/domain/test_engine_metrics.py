"""The scrape check: a settled engine without series in Prometheus is Degraded
(MetricsUnavailable) naming the query that came back empty; before the grace, nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from domain_fixtures import T0, at, latency_stage, make_spec

from specdecode.api.gate_spec import GateSpec, GateType, ItlDefinition
from specdecode.api.status import ConditionStatus
from specdecode.domain.conditions import DEGRADED
from specdecode.domain.engine_metrics import (
    METRICS_UNAVAILABLE,
    EnginePod,
    presence_query,
    reads_engine_metrics,
    settled,
    settles_at,
)
from specdecode.domain.pass_decision import with_metrics_check
from specdecode.domain.rollout_state import ConditionRecord, RolloutState
from specdecode.reconciler.spec_boundary import stage_needs_of

pytestmark = pytest.mark.unit

GRACE = timedelta(seconds=35)
NS = "team-a"
BASE, CAND = "llama-baseline-6d9f7-x2k4p", "llama-candidate-5c8b9-q7r2m"
QUERY = f'vllm:num_requests_running{{namespace="team-a",pod=~"{BASE}|{CAND}"}}'


def fresh() -> RolloutState:
    """A status as `decide` leaves it: Degraded False (the phase has no complaint)."""
    condition = ConditionRecord(
        type=DEGRADED,
        status=ConditionStatus.FALSE,
        reason="AsExpected",
        last_transition_time=T0,
        observed_generation=2,
    )
    return RolloutState(conditions=[condition])


def both_ready_at(seconds: float) -> list[EnginePod]:
    return [EnginePod(BASE, at(seconds)), EnginePod(CAND, at(seconds))]


def degraded(status: RolloutState) -> ConditionRecord:
    return next(c for c in status.conditions if c.type == DEGRADED)


def check(
    pods: list[EnginePod], scraped: frozenset[str] | None, seconds: float, old: object = None
) -> RolloutState:
    before = old if isinstance(old, RolloutState) else fresh()
    return with_metrics_check(before, fresh(), NS, pods, scraped, GRACE, at(seconds))


def test_engines_not_ready_yet_are_not_checked() -> None:
    pods = [EnginePod(BASE, None), EnginePod(CAND, None)]
    assert settled(pods, at(600), GRACE) == ()
    assert settles_at(pods, at(600), GRACE) is None
    assert degraded(check(pods, frozenset(), 600)).status is ConditionStatus.FALSE


def test_engines_ready_for_less_than_the_grace_are_not_checked_yet() -> None:
    pods = both_ready_at(0)
    assert settled(pods, at(34), GRACE) == ()
    assert settles_at(pods, at(34), GRACE) == at(35)  # the reconcile loop wakes then
    assert degraded(check(pods, frozenset(), 34)).status is ConditionStatus.FALSE


def test_settled_engines_without_series_are_degraded_naming_the_query() -> None:
    pods = both_ready_at(0)
    assert settled(pods, at(35), GRACE) == (BASE, CAND)
    assert presence_query(NS, [CAND, BASE]) == QUERY
    condition = degraded(check(pods, frozenset(), 35))
    assert condition.status is ConditionStatus.TRUE
    assert condition.reason == METRICS_UNAVAILABLE
    assert f"`{QUERY}` returned nothing" in condition.message
    assert "`namespace` and `pod` labels" in condition.message
    assert "monitoring.enginePodMonitor.enabled" in condition.message
    assert condition.last_transition_time == at(35)


def test_only_the_pods_without_series_are_named() -> None:
    condition = degraded(check(both_ready_at(0), frozenset({BASE}), 40))
    assert condition.reason == METRICS_UNAVAILABLE
    assert f'pod=~"{CAND}"' in condition.message and BASE not in condition.message


def test_a_pod_that_settled_later_is_checked_once_it_settles() -> None:
    pods = [EnginePod(BASE, at(0)), EnginePod(CAND, at(20))]
    assert settled(pods, at(40), GRACE) == (BASE,)
    assert settles_at(pods, at(40), GRACE) == at(55)
    assert degraded(check(pods, frozenset({BASE}), 40)).status is ConditionStatus.FALSE


def test_series_present_clear_the_condition() -> None:
    pods = both_ready_at(0)
    before = check(pods, frozenset(), 35)
    after = check(pods, frozenset({BASE, CAND}), 50, old=before)
    assert degraded(after).status is ConditionStatus.FALSE


def test_the_condition_does_not_flap_while_series_stay_missing() -> None:
    pods = both_ready_at(0)
    first = check(pods, frozenset(), 35)
    again = check(pods, frozenset(), 80, old=first)
    assert again == first  # same transition time: no status write


def test_an_unknown_answer_keeps_the_condition_but_never_sets_it() -> None:
    pods = both_ready_at(0)
    assert degraded(check(pods, None, 60)).status is ConditionStatus.FALSE
    before = check(pods, frozenset(), 35)
    kept = degraded(check(pods, None, 60, old=before))
    assert kept.reason == METRICS_UNAVAILABLE and kept.last_transition_time == at(35)


@pytest.mark.parametrize("reason", ["AnalysisFailed", METRICS_UNAVAILABLE])
def test_degraded_for_a_reason_of_the_phase_stays_as_the_phase_says(reason: str) -> None:
    """Its own MetricsUnavailable too: a rollback after the gates' errors keeps its text."""
    phase = RolloutState(
        conditions=[
            ConditionRecord(
                type=DEGRADED,
                status=ConditionStatus.TRUE,
                reason=reason,
                message="the phase's words",
                last_transition_time=T0,
            )
        ]
    )
    checked = with_metrics_check(phase, phase, NS, both_ready_at(0), frozenset(), GRACE, at(40))
    assert checked is phase


def test_dots_in_pod_names_are_literal_in_the_regex() -> None:
    assert (
        presence_query("ns", ["a.b-1"])
        == 'vllm:num_requests_running{namespace="ns",pod=~"a\\\\.b-1"}'
    )


def test_only_rollouts_whose_gates_read_engine_metrics_are_checked() -> None:
    assert reads_engine_metrics(
        stage_needs_of(make_spec())
    )  # an Acceptance gate reads vLLM's counters
    # TailLatency reads the step histograms too (its cross-check, or ServerStep itself)
    assert reads_engine_metrics(stage_needs_of(make_spec(stages=[latency_stage()])))
    load_pods_only = [
        GateSpec(name="tpot", type=GateType.SPEEDUP),
        GateSpec(name="errors", type=GateType.ERROR_RATE),
    ]
    assert not reads_engine_metrics(
        stage_needs_of(make_spec(stages=[latency_stage(gates=load_pods_only)]))
    )
    server_step = GateSpec(
        name="p99-step", type=GateType.TAIL_LATENCY, itl_definition=ItlDefinition.SERVER_STEP
    )
    assert reads_engine_metrics(
        stage_needs_of(make_spec(stages=[latency_stage(gates=[server_step])]))
    )
