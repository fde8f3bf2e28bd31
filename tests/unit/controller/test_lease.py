"""Leader election: one holder; a standby takes over on release at once, on silence only
after a full lease duration by its own clock, and two standbys never both win."""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from specdecode.adapters.kube.lease import LeaseElector, LeaseTerms

pytestmark = pytest.mark.unit


class FakeLeases:
    """The Lease API with the server's optimistic concurrency (resourceVersion)."""

    def __init__(self) -> None:
        self.stored: client.V1Lease | None = None
        self.version = 0
        self.requests: list[str] = []

    def _answer(self) -> client.V1Lease:
        assert self.stored is not None
        return copy.deepcopy(self.stored)

    def read_namespaced_lease(self, name: str, namespace: str) -> client.V1Lease:
        self.requests.append("get")
        if self.stored is None:
            raise ApiException(status=404)
        return self._answer()

    def create_namespaced_lease(self, namespace: str, body: client.V1Lease) -> client.V1Lease:
        self.requests.append("create")
        if self.stored is not None:
            raise ApiException(status=409)
        return self._store(body)

    def replace_namespaced_lease(
        self, name: str, namespace: str, body: client.V1Lease
    ) -> client.V1Lease:
        self.requests.append("update")
        assert self.stored is not None
        assert body.metadata is not None and self.stored.metadata is not None
        if body.metadata.resource_version != self.stored.metadata.resource_version:
            raise ApiException(status=409)
        return self._store(body)

    def _store(self, body: client.V1Lease) -> client.V1Lease:
        self.version += 1
        self.stored = copy.deepcopy(body)
        assert self.stored.metadata is not None
        self.stored.metadata.resource_version = str(self.version)
        return self._answer()

    @property
    def holder(self) -> str | None:
        if self.stored is None or self.stored.spec is None:
            return None
        holder: str | None = self.stored.spec.holder_identity
        return holder


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def elector(api: FakeLeases, identity: str, clock: Clock) -> LeaseElector:
    terms = LeaseTerms("ops", "specdecode-operator", identity, duration_seconds=30)
    return LeaseElector(cast(Any, api), terms, monotonic=clock)


def test_one_replica_leads_and_renews_with_one_request() -> None:
    api, clock = FakeLeases(), Clock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    api.requests.clear()
    assert a.try_acquire_or_renew()
    assert api.requests == ["update"]
    assert api.holder == "a"


def test_a_silent_leader_is_replaced_only_after_a_full_duration() -> None:
    api, clock = FakeLeases(), Clock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b starts watching the record now
    clock.now = 29.0
    assert not b.try_acquire_or_renew()
    clock.now = 30.0
    assert b.try_acquire_or_renew()
    assert api.holder == "b" and api.stored is not None
    assert api.stored.spec is not None and api.stored.spec.lease_transitions == 1
    assert not a.try_acquire_or_renew()  # the old leader learns it lost
    assert not a.leading


def test_renewals_keep_the_standby_waiting() -> None:
    api, clock = FakeLeases(), Clock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    a.try_acquire_or_renew()
    for second in range(0, 120, 10):
        clock.now = float(second)
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()


def test_a_released_lease_is_taken_at_once() -> None:
    api, clock = FakeLeases(), Clock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    a.release()
    assert api.holder is None
    assert b.try_acquire_or_renew()


def test_a_release_the_api_server_forbids_is_reported_not_raised() -> None:
    """A Helm uninstall deletes the Role as it stops the pods: the stopping leader's last
    update is a 403. It says so and stops cleanly; the Lease expires for the next one."""
    api, clock = FakeLeases(), Clock()
    a = elector(api, "a", clock)
    a.try_acquire_or_renew()

    def forbidden(name: str, namespace: str, body: client.V1Lease) -> client.V1Lease:
        raise ApiException(status=403, reason="Forbidden")

    api.replace_namespaced_lease = forbidden  # type: ignore[method-assign]
    assert a.release() == "403 Forbidden"
    assert api.holder == "a"  # not released: it expires
    assert a.release() is None  # nothing held any more


def test_two_standbys_racing_for_an_expired_lease_cannot_both_win() -> None:
    api, clock = FakeLeases(), Clock()
    a, b, c = (elector(api, name, clock) for name in "abc")
    a.try_acquire_or_renew()
    b.try_acquire_or_renew(), c.try_acquire_or_renew()
    clock.now = 31.0
    stale_read = api.read_namespaced_lease("specdecode-operator", "ops")
    assert b.try_acquire_or_renew()
    # c decides from the same (now outdated) record: its write carries the old version.
    c._read = lambda: copy.deepcopy(stale_read)  # type: ignore[method-assign]
    assert not c.try_acquire_or_renew()
    assert api.holder == "b"
