"""One Event per transition across kills and refused writes (`reconciler.apply`).

The operator "dies" at the status write (`FakeKube.die_at_status_write`) and a fresh
runtime, as a restarted process would, reconciles the copy a LIST would then return. Events
are posted before the status write, so a death right after the write has announced its
transition already (status first lost it), and a death right before is repeated under the
same Event names. A write refused as stale withdraws what its attempt created, and only
that.
"""

from __future__ import annotations

from typing import Any

import pytest
from controller_fakes import (
    EAGLE3,
    NAME,
    NAMESPACE,
    UID,
    FakeCluster,
    FakeKube,
    OperatorKilled,
    make_runtime,
    raw_spec,
)
from kubernetes.client import ApiException

from specdecode.api import Phase
from specdecode.reconciler.reconcile import RolloutRead, RolloutRef, StaleRollout, reconcile

pytestmark = pytest.mark.unit


def ref(version: str) -> RolloutRef:
    return RolloutRef(NAMESPACE, NAME, UID, 1, resource_version=version)


def sent(kube: FakeKube, verb: str) -> int:
    return sum(1 for method, _, _ in kube.calls if method.endswith(verb))


async def test_a_death_right_after_the_status_write_has_announced_the_transition() -> None:
    kube = FakeKube()
    kube.die_at_status_write = "after"
    with pytest.raises(OperatorKilled):
        await reconcile(
            make_runtime(kube, FakeCluster()), RolloutRead(ref("41"), raw_spec(EAGLE3), None, {})
        )
    assert kube.status is not None and kube.status["phase"] == Phase.DEPLOYING.value
    assert kube.event_reasons() == ["AnalysisStarted"]  # status first: [] (lost)
    kube.die_at_status_write = None
    restarted = make_runtime(kube, FakeCluster())  # its LIST returns the written status
    version = kube.current_version or ""
    again = await reconcile(restarted, RolloutRead(ref(version), raw_spec(EAGLE3), kube.status, {}))
    assert again.events == ()  # the transition is not decided again
    assert kube.event_reasons() == ["AnalysisStarted"]


async def test_a_death_right_before_the_status_write_is_repeated_under_the_same_names() -> None:
    kube = FakeKube()
    kube.die_at_status_write = "before"
    with pytest.raises(OperatorKilled):
        await reconcile(
            make_runtime(kube, FakeCluster()), RolloutRead(ref("41"), raw_spec(EAGLE3), None, {})
        )
    assert kube.status is None
    kube.die_at_status_write = None
    restarted = make_runtime(kube, FakeCluster())
    decision = await reconcile(restarted, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    assert [e.reason for e in decision.events] == ["AnalysisStarted"]
    assert kube.status is not None and kube.status["phase"] == Phase.DEPLOYING.value
    assert kube.event_reasons() == ["AnalysisStarted"]
    assert sent(kube, "create_namespaced_event") == 2  # the control: posted twice, kept once


async def test_a_write_refused_as_stale_withdraws_the_events_it_posted() -> None:
    kube = FakeKube()
    kube.current_version = "50"  # the rollout changed after the copy at 41 was read
    with pytest.raises(StaleRollout):
        await reconcile(
            make_runtime(kube, FakeCluster()), RolloutRead(ref("41"), raw_spec(EAGLE3), None, {})
        )
    assert sent(kube, "create_namespaced_event") == 1  # the control: it was posted
    assert kube.events == {}  # and taken back: its transition was never written


async def test_a_transition_withdrawn_and_decided_again_is_announced_once() -> None:
    kube = FakeKube()
    kube.current_version = "50"  # only metadata changed: the status is the same
    runtime = make_runtime(kube, FakeCluster())
    with pytest.raises(StaleRollout):
        await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    await reconcile(runtime, RolloutRead(ref("50"), raw_spec(EAGLE3), None, {}))
    assert kube.event_reasons() == ["AnalysisStarted"]


async def test_a_refused_repeat_keeps_the_event_an_earlier_attempt_created() -> None:
    kube = FakeKube()
    kube.die_at_status_write = "before"
    with pytest.raises(OperatorKilled):
        await reconcile(
            make_runtime(kube, FakeCluster()), RolloutRead(ref("41"), raw_spec(EAGLE3), None, {})
        )
    kube.die_at_status_write = None
    kube.current_version = "42"  # kopf wrote its annotations when the restart found it
    with pytest.raises(StaleRollout):
        await reconcile(
            make_runtime(kube, FakeCluster()), RolloutRead(ref("41"), raw_spec(EAGLE3), None, {})
        )
    assert sent(kube, "delete_namespaced_event") == 0  # this attempt created nothing
    assert kube.event_reasons() == ["AnalysisStarted"]


async def test_a_write_that_may_have_landed_keeps_its_events() -> None:
    kube = FakeKube()
    kube.fail_status_with = 504  # a timeout: the server may have applied it
    with pytest.raises(ApiException):
        await reconcile(
            make_runtime(kube, FakeCluster()), RolloutRead(ref("41"), raw_spec(EAGLE3), None, {})
        )
    assert kube.event_reasons() == ["AnalysisStarted"]
    assert sent(kube, "delete_namespaced_event") == 0


async def test_an_event_already_withdrawn_is_not_an_error() -> None:
    kube = FakeKube()
    kube.current_version = "50"
    original = kube.handle

    def gone_before_the_delete(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if method == "core.delete_namespaced_event":
            kube.events.clear()  # e.g. expired, or deleted by hand
        return original(method, args, kwargs)

    kube.handle = gone_before_the_delete  # type: ignore[method-assign]
    with pytest.raises(StaleRollout):  # not the delete's 404
        await reconcile(
            make_runtime(kube, FakeCluster()), RolloutRead(ref("41"), raw_spec(EAGLE3), None, {})
        )
