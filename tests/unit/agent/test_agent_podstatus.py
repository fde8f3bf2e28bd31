"""Pod phase and conditions computed like kubelet does."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.agent.podstatus import (
    ConditionClock,
    ContainerView,
    PodAddresses,
    pod_phase,
    pod_status,
)

pytestmark = pytest.mark.unit

RUNNING: dict[str, Any] = {"running": {"startedAt": "t"}}
WAITING: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}


def done(code: int) -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}


def view(
    state: dict[str, Any], last: dict[str, Any] | None = None, ready: bool = False
) -> ContainerView:
    return ContainerView("c", "img", state, last or {}, ready=ready)


@pytest.mark.parametrize(
    ("policy", "states", "phase"),
    [
        ("Always", [WAITING], "Pending"),
        ("Always", [RUNNING], "Running"),
        ("Always", [RUNNING, WAITING], "Pending"),
        ("Always", [done(0)], "Running"),
        ("OnFailure", [done(0), done(0)], "Succeeded"),
        ("OnFailure", [done(1)], "Running"),
        ("Never", [done(0), done(2)], "Failed"),
        ("Never", [done(0)], "Succeeded"),
    ],
)
def test_phase(policy: str, states: list[dict[str, Any]], phase: str) -> None:
    assert pod_phase(policy, [], [view(s) for s in states]) == phase


def test_crash_looping_container_counts_as_running() -> None:
    looping = view({"waiting": {"reason": "CrashLoopBackOff"}}, last=done(1))
    assert pod_phase("Always", [], [looping]) == "Running"


def test_init_containers_gate_the_phase() -> None:
    mains = [view({"waiting": {"reason": "PodInitializing"}})]
    assert pod_phase("Always", [view(RUNNING)], mains) == "Pending"
    assert pod_phase("Never", [view(done(1))], mains) == "Failed"
    assert pod_phase("Always", [view(done(0))], [view(RUNNING)]) == "Running"


def test_ready_condition_lists_unready_containers_and_keeps_transition_time() -> None:
    clock = ConditionClock()
    addresses = PodAddresses("127.0.0.3", "127.0.0.1", "t0")
    first = pod_status("Always", [], [view(RUNNING, ready=False)], addresses, clock)
    ready = {c["type"]: c for c in first["conditions"]}["Ready"]
    assert ready["status"] == "False"
    assert ready["reason"] == "ContainersNotReady"
    assert ready["message"] == "containers with unready status: [c]"
    again = pod_status("Always", [], [view(RUNNING, ready=False)], addresses, clock)
    assert again == first
    later = pod_status("Always", [], [view(RUNNING, ready=True)], addresses, clock)
    conditions = {c["type"]: c for c in later["conditions"]}
    assert (
        conditions["Ready"]["status"] == "True"
        and conditions["ContainersReady"]["status"] == "True"
    )
    assert later["podIP"] == "127.0.0.3" and later["podIPs"] == [{"ip": "127.0.0.3"}]
    assert later["containerStatuses"][0]["ready"] is True


def test_completed_pod_is_not_ready_with_pod_completed() -> None:
    status = pod_status(
        "Never", [], [view(done(0))], PodAddresses("127.0.0.3", "127.0.0.1", "t"), ConditionClock()
    )
    ready = {c["type"]: c for c in status["conditions"]}["Ready"]
    assert status["phase"] == "Succeeded"
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")
