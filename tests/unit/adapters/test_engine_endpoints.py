"""The engine addresses load pods send to, read from cached pods as a Service would list them.

Ready, addressed, not terminating, of the one role: what the role's EndpointSlice marks
ready. The URL form (`http://ip:port`, IPv6 in brackets, sorted) is the one load pods are
started with and pushed, so it must not change.
"""

from __future__ import annotations

from typing import Any

import pytest

from specdecode.adapters.kube.endpoints import ready_engine_endpoints
from specdecode.domain.observations import ChildRole

pytestmark = pytest.mark.unit

BASELINE, CANDIDATE = ChildRole.BASELINE, ChildRole.CANDIDATE


def pod(
    ip: str | None,
    role: str = "baseline",
    ready: str = "True",
    deleting: bool = False,
    extra_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": f"engine-{ip}",
        "labels": {"specdecode.io/rollout": "llama", "specdecode.io/role": role}
        | (extra_labels or {}),
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": ready}]}
    if ip is not None:
        status["podIP"] = ip
    return {"metadata": metadata, "status": status}


def test_ready_pods_of_the_role_sorted_with_the_engine_port() -> None:
    pods = [pod("10.0.0.20"), pod("10.0.0.3"), pod("10.0.0.9", role="candidate")]
    assert ready_engine_endpoints(pods, BASELINE, 8000) == [
        "http://10.0.0.20:8000",
        "http://10.0.0.3:8000",
    ]
    assert ready_engine_endpoints(pods, CANDIDATE, 9001) == ["http://10.0.0.9:9001"]


@pytest.mark.parametrize(
    "unready",
    [
        pod("10.0.0.5", ready="False"),
        pod("10.0.0.5", ready="Unknown"),
        pod("10.0.0.5", deleting=True),
        pod(None),
        pod("10.0.0.5", role="production"),
        pod("10.0.0.5", role="shadow-load", extra_labels={"specdecode.io/side": "baseline"}),
    ],
    ids=["not-ready", "ready-unknown", "deleting", "no-ip", "production", "load-pod"],
)
def test_pods_a_service_would_not_route_to_are_left_out(unready: dict[str, Any]) -> None:
    assert ready_engine_endpoints([pod("10.0.0.1"), unready], BASELINE, 8000) == [
        "http://10.0.0.1:8000"
    ]


def test_a_pod_without_conditions_is_not_ready() -> None:
    bare = {
        "metadata": {"labels": {"specdecode.io/role": "baseline"}},
        "status": {"podIP": "1.2.3.4"},
    }
    assert ready_engine_endpoints([bare], BASELINE, 8000) == []


def test_ipv6_addresses_are_bracketed_and_duplicates_collapse() -> None:
    pods = [pod("fd00::5"), pod("fd00::5")]
    assert ready_engine_endpoints(pods, BASELINE, 8000) == ["http://[fd00::5]:8000"]


def test_no_pods_no_endpoints() -> None:
    assert ready_engine_endpoints([], CANDIDATE, 8000) == []
