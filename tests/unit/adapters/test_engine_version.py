"""GET /version of ready engine pods only, and a mismatch as Degraded naming both releases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from specdecode.adapters.engine_version import RETRY_SILENT_SECONDS, EngineVersions
from specdecode.api.status import ConditionStatus
from specdecode.domain.conditions import DEGRADED
from specdecode.domain.engine_version import VERSION_MISMATCH, RunningVersion
from specdecode.domain.pass_decision import with_version_check
from specdecode.domain.rollout_state import ConditionRecord, RolloutState

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


def _pod(name: str, ip: str, role: str | None, ready: bool) -> dict[str, Any]:
    labels = {"specdecode.io/rollout": "r"} | ({"specdecode.io/role": role} if role else {})
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "status": {
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


class VersionServer:
    """Answers GET /version per pod IP and counts the requests."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(request.url.host)
        if request.url.host == "10.0.0.4":
            return httpx.Response(404, json={"detail": "Not Found"})
        assert request.url.path == "/version" and request.url.port == 8000
        versions = {"10.0.0.1": "0.33.0", "10.0.0.2": "0.11.2"}
        return httpx.Response(200, json={"version": versions[request.url.host]})


async def test_asks_ready_engine_pods_once_each_and_skips_the_rest() -> None:
    pods = [
        _pod("prod-0", "10.0.0.1", "production", ready=True),
        _pod("cand-0", "10.0.0.2", "candidate", ready=True),
        _pod("base-0", "10.0.0.3", "baseline", ready=False),  # loading: not asked
        _pod("load-0", "10.0.0.9", None, ready=True),  # a load pod: not an engine
        _pod("odd-0", "10.0.0.4", "baseline", ready=True),  # no /version: unknown
    ]
    server = VersionServer()
    now = [100.0]
    client = httpx.AsyncClient(transport=httpx.MockTransport(server))
    source = EngineVersions(clock=lambda: now[0])
    expected = [RunningVersion("prod-0", "0.33.0"), RunningVersion("cand-0", "0.11.2")]
    assert await source.running_versions(client, "ns/r", pods, 8000) == expected
    assert sorted(server.asked) == ["10.0.0.1", "10.0.0.2", "10.0.0.4"]
    now[0] += RETRY_SILENT_SECONDS - 1  # the silent pod is not asked on every reconcile
    assert await source.running_versions(client, "ns/r", pods, 8000) == expected
    assert sorted(server.asked) == ["10.0.0.1", "10.0.0.2", "10.0.0.4"]
    now[0] += 2  # but again a minute later; the pods that answered, never
    assert await source.running_versions(client, "ns/r", pods, 8000) == expected
    assert sorted(server.asked) == ["10.0.0.1", "10.0.0.2", "10.0.0.4", "10.0.0.4"]
    await client.aclose()


async def test_one_rollouts_reconcile_keeps_what_the_others_learned() -> None:
    server = VersionServer()
    client = httpx.AsyncClient(transport=httpx.MockTransport(server))
    source = EngineVersions()
    first = [_pod("prod-0", "10.0.0.1", "production", ready=True)]
    second = [_pod("odd-0", "10.0.0.4", "baseline", ready=True)]  # silent
    for _ in range(3):
        await source.running_versions(client, "ns/a", first, 8000)
        await source.running_versions(client, "ns/b", second, 8000)
    assert sorted(server.asked) == ["10.0.0.1", "10.0.0.4"]
    source.forget("ns/a")
    await source.running_versions(client, "ns/a", first, 8000)
    assert sorted(server.asked) == ["10.0.0.1", "10.0.0.1", "10.0.0.4"]
    await client.aclose()


def _status(degraded: bool, reason: str, since: datetime) -> RolloutState:
    truth = ConditionStatus.TRUE if degraded else ConditionStatus.FALSE
    condition = ConditionRecord(
        type=DEGRADED,
        status=truth,
        reason=reason,
        last_transition_time=since,
        observed_generation=3,
    )
    return RolloutState(conditions=[condition])


def test_a_mismatch_is_degraded_naming_both_releases_and_the_pod() -> None:
    fresh = _status(False, "AsExpected", T0)
    running = [RunningVersion("prod-0", "0.33.0"), RunningVersion("cand-0", "0.11.2")]
    checked = with_version_check(fresh, fresh, "0.33.0", running, T0)
    degraded = checked.conditions[0]
    assert degraded.status is ConditionStatus.TRUE and degraded.reason == VERSION_MISMATCH
    assert "cand-0 runs vLLM 0.11.2" in degraded.message and "vLLM 0.33.0" in degraded.message
    assert "prod-0" not in degraded.message
    assert degraded.observed_generation == 3


def test_matching_releases_change_nothing() -> None:
    fresh = _status(False, "AsExpected", T0)
    assert with_version_check(fresh, fresh, "0.33.0", [RunningVersion("p", "0.33.0")], T0) is fresh


def test_the_transition_time_holds_while_the_mismatch_lasts() -> None:
    old = _status(True, VERSION_MISMATCH, T0)
    recomputed = _status(False, "AsExpected", T0 + timedelta(minutes=5))  # from the phase
    later = T0 + timedelta(minutes=5)
    checked = with_version_check(old, recomputed, "0.33.0", [RunningVersion("p", "0.20.2")], later)
    assert checked.conditions[0].last_transition_time == T0


def test_a_degraded_phase_keeps_its_own_reason() -> None:
    rolled_back = _status(True, "Aborted", T0)
    running = [RunningVersion("p", "0.20.2")]
    assert with_version_check(rolled_back, rolled_back, "0.33.0", running, T0) is rolled_back
