"""Leader election on a coordination.k8s.io Lease: of several replicas, one reconciles.

client-go's protocol: the holder renews, a standby takes over an empty or expired record
(expiry by its own clock, so skew does not matter), and every write carries the
resourceVersion read, so two racing standbys cannot both win. `LeaseElector` is
synchronous; callers run it in a worker thread. More: docs/internals.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client import ApiException


@dataclass(frozen=True)
class LeaseTerms:
    """Where the Lease is, who we are, and its timing."""

    namespace: str
    name: str
    identity: str
    duration_seconds: float = 30.0


class LeaseElector:
    """Acquire, renew and release one Lease for one identity."""

    def __init__(
        self,
        api: client.CoordinationV1Api,
        terms: LeaseTerms,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.api, self.terms = api, terms
        self._monotonic, self._wall = monotonic, wall
        self._held: Any = None  # the Lease as we last wrote it, while we hold it
        self._seen: tuple[Any, ...] | None = None  # (holder, renewTime) last observed
        self._seen_at = 0.0

    @property
    def leading(self) -> bool:
        """Whether our last acquire or renew succeeded."""
        return self._held is not None

    def try_acquire_or_renew(self) -> bool:
        """One round: True if we hold the Lease afterwards."""
        if self._held is not None and self._renew(self._held):
            return True
        lease = self._read()
        if lease is None:
            return self._create()
        spec = lease.spec
        record = (spec.holder_identity, spec.renew_time)
        if record != self._seen:
            self._seen, self._seen_at = record, self._monotonic()
        holder = spec.holder_identity
        expired = self._monotonic() - self._seen_at >= float(
            spec.lease_duration_seconds or self.terms.duration_seconds
        )
        if holder and holder != self.terms.identity and not expired:
            self._held = None
            return False
        if holder != self.terms.identity:
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
            spec.acquire_time = self._wall()
        return self._renew(lease)

    def abandon(self) -> None:
        """Forget the Lease without releasing it (it is not ours any more)."""
        self._held = None

    def release(self) -> str | None:
        """Give the Lease up at once (graceful shutdown): a standby takes over without
        waiting for it to expire. Returns why the API server refused, else None: a stopping
        replica must not fail on it (a Helm uninstall deletes the RBAC as it stops the pods,
        so the last update is a 403), and the Lease then simply expires."""
        lease, self._held = self._held, None
        if lease is None:
            return None
        lease.spec.holder_identity = None
        lease.spec.lease_duration_seconds = 1
        try:
            self.api.replace_namespaced_lease(self.terms.name, self.terms.namespace, lease)
        except ApiException as error:
            if error.status not in (404, 409):  # gone, or someone else holds it already
                return f"{error.status} {error.reason}"
        return None

    def _read(self) -> Any:
        try:
            return self.api.read_namespaced_lease(self.terms.name, self.terms.namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def _create(self) -> bool:
        now = self._wall()
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(name=self.terms.name, namespace=self.terms.namespace),
            spec=client.V1LeaseSpec(
                holder_identity=self.terms.identity,
                lease_duration_seconds=int(self.terms.duration_seconds),
                acquire_time=now,
                renew_time=now,
                lease_transitions=0,
            ),
        )
        try:
            self._held = self.api.create_namespaced_lease(self.terms.namespace, body)
        except ApiException as error:
            if error.status == 409:  # another replica created it first
                return False
            raise
        return True

    def _renew(self, lease: Any) -> bool:
        lease.spec.holder_identity = self.terms.identity
        lease.spec.lease_duration_seconds = int(self.terms.duration_seconds)
        lease.spec.renew_time = self._wall()
        try:
            self._held = self.api.replace_namespaced_lease(
                self.terms.name, self.terms.namespace, lease
            )
        except ApiException as error:
            if error.status in (404, 409):
                self._held = None
                return False
            raise
        return True
