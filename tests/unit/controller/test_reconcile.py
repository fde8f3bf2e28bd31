"""One reconcile against a recording API server and the watched cache.

What an SRE cares about: an idle rollout sends nothing; a reconcile writes only what
differs; an invalid spec removes the shadows; a stale copy of the rollout writes nothing;
a transition computed twice (a kill between its Event and its status write) posts one Event
(more such cases in test_events_exactly_once).
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
    make_runtime,
    raw_spec,
)
from kubernetes.client import ApiException

from specdecode.adapters.render import render_children
from specdecode.api import ACTION_ANNOTATION, Phase, SpecDecodeRolloutSpec
from specdecode.domain.decision import Decision, DesiredChildren
from specdecode.reconciler import status_boundary
from specdecode.reconciler.reconcile import (
    RolloutRead,
    RolloutRef,
    StaleRollout,
    next_reconcile_in,
    reconcile,
)
from specdecode.reconciler.runtime import Runtime

pytestmark = pytest.mark.unit


def ref(version: str = "1", generation: int = 1) -> RolloutRef:
    return RolloutRef(NAMESPACE, NAME, UID, generation, resource_version=version)


def status_of(decision: Decision) -> dict[str, Any]:
    wire = status_boundary.status_of(decision.status)
    dumped: dict[str, Any] = wire.model_dump(mode="json", by_alias=True)
    return dumped


def store_children(cluster: FakeCluster, spec: dict[str, Any], desired: DesiredChildren) -> None:
    parsed = SpecDecodeRolloutSpec.model_validate(spec)
    cluster.store_all(render_children(NAME, NAMESPACE, UID, parsed, desired))


async def converge_plain(runtime: Runtime, kube: FakeKube, cluster: FakeCluster) -> Decision:
    """A plain-decoding rollout reconciled until its children and status settled."""
    spec = raw_spec(None)
    first = await reconcile(runtime, RolloutRead(ref("1"), spec, None, {}))
    store_children(cluster, spec, first.children)
    second = await reconcile(
        runtime, RolloutRead(ref(kube.current_version or "1"), spec, status_of(first), {})
    )
    assert second.status.phase is Phase.PROMOTED
    return second


async def test_an_idle_rollout_sends_no_request() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    settled = await converge_plain(runtime, kube, cluster)
    assert kube.applied()  # the control: the first pass did create children
    kube.calls.clear()
    runtime.clock.advance(3600)  # type: ignore[attr-defined]
    version = kube.current_version or "1"
    again = await reconcile(
        runtime, RolloutRead(ref(version), raw_spec(None), status_of(settled), {})
    )
    assert kube.calls == []
    assert again.status == settled.status
    assert next_reconcile_in(runtime, again) == runtime.settings.resync_seconds


async def test_a_child_edited_by_hand_is_applied_again_alone() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    settled = await converge_plain(runtime, kube, cluster)
    deployment = cluster.view.rollout_deployments(NAMESPACE, NAME)[0]
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = "edited/by:hand"
    kube.calls.clear()
    version = kube.current_version or "1"
    await reconcile(runtime, RolloutRead(ref(version), raw_spec(None), status_of(settled), {}))
    assert kube.verbs() == ["apply"]
    assert kube.applied()[0]["metadata"]["name"] == NAME


async def test_shadows_absent_from_the_cache_are_not_deleted() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    await converge_plain(runtime, kube, cluster)
    assert not any(verb.startswith("delete") for verb in kube.verbs())


async def test_an_invalid_spec_removes_the_shadows_and_keeps_production() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    spec = raw_spec(EAGLE3)
    analysing = await reconcile(runtime, RolloutRead(ref("1"), spec, None, {}))
    assert analysing.children.shadows
    store_children(cluster, spec, analysing.children)
    kube.calls.clear()
    broken = {**spec, "model": {}}  # the model name is required
    version = kube.current_version or "1"
    failed = await reconcile(
        runtime, RolloutRead(ref(version, 2), broken, status_of(analysing), {})
    )
    assert failed.status.phase is Phase.FAILED
    deleted = sorted(
        (method, args[0])
        for method, args, _ in kube.calls
        if method.split(".")[1].startswith("delete")
    )
    assert deleted == [
        ("apps.delete_namespaced_deployment", f"{NAME}-baseline"),
        ("apps.delete_namespaced_deployment", f"{NAME}-candidate"),
        ("core.delete_namespaced_service", f"{NAME}-baseline"),
        ("core.delete_namespaced_service", f"{NAME}-candidate"),
    ]
    assert kube.applied() == []  # production cannot be rendered from it: left as it is


async def test_status_is_written_on_top_of_the_version_it_was_computed_from() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    (patch,) = [args for method, args, _ in kube.calls if method.endswith("custom_object_status")]
    assert patch[5]["metadata"] == {"resourceVersion": "41"}


async def test_a_conflicting_status_write_applies_nothing_else() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    status = kube.status
    kube.calls.clear()
    kube.current_version = "50"  # someone wrote the rollout after version 45
    with pytest.raises(StaleRollout):
        await reconcile(
            runtime, RolloutRead(ref("45"), raw_spec(EAGLE3), status, {ACTION_ANNOTATION: "abort"})
        )
    assert kube.applied() == []  # not even the children the cache lacks


async def test_a_new_rollouts_children_come_before_its_first_status() -> None:
    """No status was ever written, so none can contradict them: they need not wait."""
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    verbs = kube.verbs()
    status_write = verbs.index("patch_namespaced_custom_object_status")
    assert "apply-unforced" in verbs[:status_write]
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    kube.current_version = "50"  # a 409 on the first write: the children were applied,
    with pytest.raises(StaleRollout):  # and the next reconcile re-renders them if needed
        await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    assert kube.applied() != []


async def test_a_copy_older_than_our_own_write_is_not_reconciled() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    kube.calls.clear()
    with pytest.raises(StaleRollout):  # the watch has not delivered our write yet
        await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    assert kube.calls == []


async def test_a_write_the_server_found_unchanged_does_not_stall_the_rollout() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    kube.status_writes_are_noops = True  # e.g. a field the structural schema prunes
    runtime = make_runtime(kube, cluster)
    await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))  # no StaleRollout


async def test_a_transition_computed_again_after_a_kill_posts_one_event() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    kube.fail_status_with = 500  # the status write fails after the Event was posted
    with pytest.raises(ApiException):
        await reconcile(
            make_runtime(kube, cluster), RolloutRead(ref("41"), raw_spec(EAGLE3), None, {})
        )
    kube.fail_status_with = None
    restarted = make_runtime(kube, FakeCluster())
    decision = await reconcile(restarted, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    assert [e.reason for e in decision.events] == ["AnalysisStarted"]
    assert kube.event_reasons() == ["AnalysisStarted"]
    creates = [m for m, _, _ in kube.calls if m.endswith("create_namespaced_event")]
    assert len(creates) == 2  # the control: it was tried twice, refused once


async def test_a_transition_from_a_copy_older_than_kopfs_metadata_write_posts_one_event() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    kube.current_version = "42"  # kopf added its finalizer after the copy at 41 was read
    runtime = make_runtime(kube, cluster)
    with pytest.raises(StaleRollout):
        await reconcile(runtime, RolloutRead(ref("41"), raw_spec(EAGLE3), None, {}))
    await reconcile(
        runtime, RolloutRead(ref("42"), raw_spec(EAGLE3), None, {})
    )  # same status, newer copy
    assert kube.event_reasons() == ["AnalysisStarted"]


async def test_an_ignored_action_set_again_is_announced_again() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    settled = await converge_plain(runtime, kube, cluster)
    annotations = {ACTION_ANNOTATION: "promote"}  # does not apply in Promoted
    for version in ("60", "61"):  # the user annotates, the operator clears, and again
        await reconcile(
            runtime, RolloutRead(ref(version), raw_spec(None), status_of(settled), annotations)
        )
    assert kube.event_reasons().count("ActionIgnored") == 2


async def test_a_consumed_action_is_cleared_with_its_value() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    settled = await converge_plain(runtime, kube, cluster)
    kube.calls.clear()
    version = kube.current_version or "1"
    annotations = {ACTION_ANNOTATION: "promote"}  # does not apply in Promoted: ignored
    decision = await reconcile(
        runtime, RolloutRead(ref(version), raw_spec(None), status_of(settled), annotations)
    )
    assert [e.reason for e in decision.events] == ["ActionIgnored"]
    (clear,) = [
        args for method, args, _ in kube.calls if method.endswith("namespaced_custom_object")
    ]
    assert clear[5][0] == {
        "op": "test",
        "path": f"/metadata/annotations/{ACTION_ANNOTATION.replace('/', '~1')}",
        "value": "promote",
    }


async def test_the_analysis_clock_runs_only_while_time_drives_the_phase() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    deploying = await reconcile(runtime, RolloutRead(ref("1"), raw_spec(EAGLE3), None, {}))
    assert deploying.status.phase is Phase.DEPLOYING
    assert next_reconcile_in(runtime, deploying) == runtime.settings.reconcile_interval_seconds


def mirror_spec(route: str = "llm") -> dict[str, Any]:
    """A valid Mirror spec (checked, so the test cannot pass on the invalid-spec path)."""
    spec = raw_spec(EAGLE3)
    spec["analysis"]["traffic"] = {
        "source": "Mirror", "mirrorPairing": "ServerSide", "httpRoute": route
    }  # fmt: skip
    for stage in spec["analysis"]["stages"]:
        stage.pop("concurrency", None)
        for gate in stage["gates"]:
            if gate["type"] == "TailLatency":
                gate["itlDefinition"] = "ServerStep"
    SpecDecodeRolloutSpec.model_validate(spec)
    return spec


def http_route(name: str) -> dict[str, Any]:
    backend = {"name": NAME, "port": 8000}
    return {
        "metadata": {"name": name, "namespace": NAMESPACE, "resourceVersion": "5"},
        "spec": {"rules": [{"backendRefs": [backend]}]},
    }


@pytest.mark.parametrize(("cached", "lists"), [(True, 0), (False, 2)])
async def test_routes_come_from_the_cache_unless_the_named_one_is_missing(
    cached: bool, lists: int
) -> None:
    kube, cluster = FakeKube(), FakeCluster()
    if cached:
        cluster.indexes["routes"][NAMESPACE].append(http_route("llm"))
    runtime = make_runtime(kube, cluster)
    await reconcile(runtime, RolloutRead(ref("1"), mirror_spec(), None, {}))
    listed = [m for m, _, _ in kube.calls if m.endswith("list_namespaced_custom_object")]
    assert len(listed) == lists  # the fallback tells "absent" from "not installed"


async def test_a_route_changed_since_the_cached_copy_is_left_to_its_watch_event() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    route = http_route("llm")
    route["spec"]["rules"][0]["filters"] = [
        {
            "type": "RequestMirror",
            "requestMirror": {"backendRef": {"name": f"{NAME}-baseline", "port": 8000}},
        }
    ]  # a mirror of ours the plain rollout no longer wants
    cluster.indexes["routes"][NAMESPACE].append(route)
    refused = ApiException(status=422, reason="test failed")

    def patch_route(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if method.endswith("patch_namespaced_custom_object"):
            kube.calls.append((method, args, kwargs))
            raise refused
        return original(method, args, kwargs)

    original = kube.handle
    kube.handle = patch_route  # type: ignore[method-assign]
    runtime = make_runtime(kube, cluster)
    await reconcile(runtime, RolloutRead(ref("1"), raw_spec(None), None, {}))  # does not raise
    patches = [m for m, _, _ in kube.calls if m.endswith("patch_namespaced_custom_object")]
    assert len(patches) == 1
