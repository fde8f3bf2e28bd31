"""Ownership: an object named like a child that the rollout does not own is never written.

A user's Service named like the rollout's production is invisible to the watched cache
(no operator labels): the dry-run create says the name is taken, the rollout is Degraded
naming it, no apply of any kind reaches it; once it is gone the child is created. A child that is
ours but not yet in the cache is applied as before. The steady state costs no extra GET.
"""

from __future__ import annotations

from typing import Any

import pytest
from controller_fakes import NAME, NAMESPACE, UID, FakeCluster, FakeKube, make_runtime, raw_spec

from specdecode.adapters.kube.children import shadows_to_delete
from specdecode.api.status import ConditionStatus
from specdecode.domain.apply_findings import NOT_OWNED
from specdecode.domain.decision import Decision
from specdecode.reconciler import status_boundary
from specdecode.reconciler.reconcile import RolloutRead, RolloutRef, next_reconcile_in, reconcile

pytestmark = pytest.mark.unit


def ref(version: str) -> RolloutRef:
    return RolloutRef(NAMESPACE, NAME, UID, 1, resource_version=version)


def status_of(decision: Decision) -> dict[str, Any]:
    wire = status_boundary.status_of(decision.status)
    dumped: dict[str, Any] = wire.model_dump(mode="json", by_alias=True)
    return dumped


def degraded(decision: Decision) -> tuple[ConditionStatus, str, str]:
    condition = next(c for c in decision.status.conditions if c.type == "Degraded")
    return condition.status, condition.reason, condition.message


def writes_to(kube: FakeKube, kind: str, name: str, verb: str) -> int:
    """Requests `verb` ("apply", "apply-unforced", "create_namespaced_service", ...) about
    the object `kind`/`name`."""
    count = 0
    for method, args, _ in kube.calls:
        obj = next((a for a in args if isinstance(a, dict) and "kind" in a), None)
        if method.split(".")[-1] == verb and obj and obj["kind"] == kind:
            count += obj["metadata"]["name"] == name
    return count


def applies_to(kube: FakeKube, kind: str, name: str) -> int:
    return writes_to(kube, kind, name, "apply") + writes_to(kube, kind, name, "apply-unforced")


async def test_a_users_service_named_like_production_is_left_alone_and_reported() -> None:
    """Each reconcile here runs in a fresh operator (a restart at every step) reading only
    the stored status: the finding lives in status.applyFindings, so Degraded survives
    (control: kept in the operator's memory, the fresh process lost it)."""
    kube, cluster = FakeKube(), FakeCluster()
    kube.add_uncached("Service", NAME)  # the user's, unlabelled: the cache cannot see it
    spec = raw_spec(None)

    async def restarted_reconcile() -> Decision:
        runtime = make_runtime(kube, cluster)  # nothing in memory
        return await reconcile(
            runtime, RolloutRead(ref(kube.current_version or "1"), spec, kube.status, {})
        )

    await restarted_reconcile()
    assert writes_to(kube, "Service", NAME, "create_namespaced_service") == 1  # a dry run
    assert applies_to(kube, "Service", NAME) == 0
    assert writes_to(kube, "Deployment", NAME, "apply-unforced") == 1  # the rest goes ahead
    assert "read_namespaced_service" in kube.verbs()
    assert kube.status is not None and kube.status["applyFindings"]["notOwnedChildren"]

    second = await restarted_reconcile()
    status, reason, message = degraded(second)
    assert (status, reason) == (ConditionStatus.TRUE, NOT_OWNED)
    assert f"Service {NAMESPACE}/{NAME} already exists" in message
    assert "rename the rollout, or delete the Service" in message
    assert applies_to(kube, "Service", NAME) == 0
    # No watch event says when the user deletes it: retried at the operator's clock.
    runtime = make_runtime(kube, cluster)
    wait = next_reconcile_in(runtime, second, ref("1").key)
    assert wait <= runtime.settings.reconcile_interval_seconds
    kube.calls.clear()
    third = await restarted_reconcile()
    assert degraded(third)[1] == NOT_OWNED
    assert "patch_namespaced_custom_object_status" not in kube.verbs()  # nothing new: no write

    del kube.uncached[("Service", NAME)]  # the user deletes it
    kube.calls.clear()
    await restarted_reconcile()
    assert writes_to(kube, "Service", NAME, "apply-unforced") == 1
    assert kube.status is not None and kube.status.get("applyFindings") is None
    fourth = await restarted_reconcile()
    assert degraded(fourth)[1] != NOT_OWNED


async def test_a_child_of_ours_the_cache_has_not_shown_yet_is_applied() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    kube.add_uncached("Service", NAME, owner_uids=(UID,))  # created by us, watch lagging
    runtime = make_runtime(kube, cluster)
    await reconcile(runtime, RolloutRead(ref("1"), raw_spec(None), None, {}))
    assert writes_to(kube, "Service", NAME, "apply") == 1
    assert kube.status is not None and kube.status.get("applyFindings") is None


async def test_a_labelled_object_owned_by_another_rollout_is_not_written() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    spec = raw_spec(None)
    first = await reconcile(runtime, RolloutRead(ref("1"), spec, None, {}))
    service = next(o for o in kube.applied() if o["kind"] == "Service")
    stored = cluster.store(service)
    stored["metadata"]["ownerReferences"][0]["uid"] = "uid-of-an-older-rollout"
    stored["spec"]["selector"] = {"app": "theirs"}  # differs: stale, yet not ours to fix
    kube.calls.clear()
    await reconcile(
        runtime, RolloutRead(ref(kube.current_version or "1"), spec, status_of(first), {})
    )
    assert applies_to(kube, "Service", NAME) == 0
    assert writes_to(kube, "Service", NAME, "create_namespaced_service") == 0  # cache says
    assert kube.status is not None and len(kube.status["applyFindings"]["notOwnedChildren"]) == 1


def test_only_owned_shadows_are_deleted() -> None:
    def shadow(name: str, uid: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "ownerReferences": [{"uid": uid}]}}

    deployments = [shadow(f"{NAME}-baseline", UID), shadow(f"{NAME}-candidate", "someone")]
    doomed = shadows_to_delete(NAME, deployments, [], UID)
    assert doomed == [("Deployment", f"{NAME}-baseline")]
