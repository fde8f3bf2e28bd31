"""The kopf side: storage prefixes, the per-rollout loop, indexes and wake-ups.

The loop runs with the production intervals (5 s analysis clock, 600 s resync): an
action annotation on an idle rollout must act on the watch event, not on a timer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import kopf
import pytest
from controller_fakes import NAME, NAMESPACE, UID, FakeCluster, FakeKube, make_runtime, raw_spec
from kopf._cogs.aiokits.aioenums import FlagSetter

from specdecode.api import ACTION_ANNOTATION
from specdecode.handlers.lifecycle import configure_kopf
from specdecode.handlers.loop import KOPF_DIFFBASE, KOPF_FINALIZER, awaits_kopf
from specdecode.handlers.rollouts import (
    register_rollout_handlers,
    rollout_event,
    rollout_loop,
)
from specdecode.handlers.tunings import register_tuning_handlers
from specdecode.handlers.watches import INDEX_IDS, child_event, index_by_rollout

pytestmark = pytest.mark.unit
LOGGER = logging.getLogger("test")


def rollout_body(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "specdecode.io/v1alpha1",
        "kind": "SpecDecodeRollout",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "uid": UID,
            "generation": 1,
            "resourceVersion": "1",
            "annotations": dict(annotations or {}),
            "finalizers": [KOPF_FINALIZER],
        },
        "spec": raw_spec(None),
    }


@pytest.mark.parametrize("prefix", ["kopf.specdecode.io", "specdecode.io"])
def test_kopf_storage_keeps_the_action_annotation_in_its_diff(prefix: str) -> None:
    settings = kopf.OperatorSettings()
    configure_kopf(settings)
    if prefix == "specdecode.io":  # the control: the old, shared prefix
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=prefix)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
            prefix=prefix, key="last-handled-configuration"
        )
    body = kopf.Body(cast(Any, rollout_body({ACTION_ANNOTATION: "promote"})))
    # What kopf compares to detect a change (kopf/_core/reactor/processing.py).
    built = settings.persistence.diffbase_storage.build(body=body)
    essence = settings.persistence.progress_storage.clear(essence=built)
    seen = ACTION_ANNOTATION in (essence.get("metadata", {}).get("annotations") or {})
    assert seen is (prefix == "kopf.specdecode.io")


async def test_the_index_keeps_snapshots_without_managed_fields() -> None:
    pod = {
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": NAMESPACE,
            "labels": {"specdecode.io/rollout": NAME},
            "managedFields": [{"manager": "kubelet"}],
        },
        "status": {"phase": "Running"},
    }
    entry = await index_by_rollout(kopf.Body(cast(Any, pod)))
    assert list(entry) == [(NAMESPACE, NAME)]
    assert "managedFields" not in entry[(NAMESPACE, NAME)]["metadata"]
    assert entry[(NAMESPACE, NAME)]["status"] == {"phase": "Running"}


async def wait_until(condition: Any, seconds: float = 2.0) -> None:
    async def poll() -> None:
        while not condition():  # noqa: ASYNC110 - polls what a fake recorded
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), seconds)


def reconciles(runtime: Any) -> float:
    count = runtime.metrics.registry.get_sample_value(
        "specdecode_operator_reconcile_duration_seconds_count", {"outcome": "ok"}
    )
    return float(count or 0)


def copies_let_go(runtime: Any) -> float:
    count = runtime.metrics.registry.get_sample_value("specdecode_operator_copies_let_go_total")
    return float(count or 0)


def clears(kube: FakeKube) -> list[Any]:
    return [m for m, _, _ in kube.calls if m.endswith("patch_namespaced_custom_object")]


def start_loop(body: kopf.Body, memo: kopf.Memo) -> tuple[FlagSetter[Any], asyncio.Task[None]]:
    """The rollout's loop as kopf runs it (empty indexes), and the flag that stops it."""
    stopper: FlagSetter[Any] = FlagSetter()
    indexes: dict[str, dict[Any, Any]] = {index_id: {} for index_id in INDEX_IDS.values()}
    loop = asyncio.create_task(
        rollout_loop(body=body, memo=memo, logger=LOGGER, stopped=stopper.async_waiter, **indexes)
    )
    return stopper, loop


async def test_an_action_on_an_idle_rollout_acts_on_its_watch_event() -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)  # production intervals: 5 s clock, 600 s resync
    raw = rollout_body()
    body, memo = kopf.Body(cast(Any, raw)), kopf.Memo(runtime=runtime)
    stopper, loop = start_loop(body, memo)
    try:
        await wait_until(lambda: bool(kube.applied()))  # first pass: production created
        await wait_until(lambda: reconciles(runtime) >= 1)
        # The watch delivers our status write, then the user's annotation.
        written = [a for m, a, _ in kube.calls if m.endswith("custom_object_status")]
        raw["status"] = written[-1][5]["status"]
        raw["metadata"]["annotations"][ACTION_ANNOTATION] = "promote"
        raw["metadata"]["resourceVersion"] = kube.current_version
        assert clears(kube) == []
        await rollout_event(body=body, memo=memo)
        await wait_until(lambda: clears(kube) != [])
    finally:
        stopper.set()
        await asyncio.wait_for(loop, 5.0)


async def test_a_child_event_wakes_only_its_rollout() -> None:
    runtime = make_runtime(FakeKube(), FakeCluster())
    runtime.wakeups.register(f"{NAMESPACE}/{NAME}")
    runtime.wakeups.register(f"{NAMESPACE}/other")
    for key in (f"{NAMESPACE}/{NAME}", f"{NAMESPACE}/other"):
        await runtime.wakeups.wait(key, 0)  # consume the initial wake-up
    child = {"metadata": {"namespace": NAMESPACE, "labels": {"specdecode.io/rollout": NAME}}}
    await child_event(body=kopf.Body(cast(Any, child)), memo=kopf.Memo(runtime=runtime))
    assert await runtime.wakeups.wait(f"{NAMESPACE}/{NAME}", 0.5)
    assert not await runtime.wakeups.wait(f"{NAMESPACE}/other", 0.05)


@pytest.mark.parametrize("finalizer_arrives", [True, False])
async def test_a_new_rollouts_first_copy_is_let_go_once(finalizer_arrives: bool) -> None:
    """kopf starts the daemon in the pass that adds its finalizer: the copy without it is
    about to be superseded, and a status write from it would be refused (409). Let go
    once only: a finalizer write refused for good must not stall the rollout."""
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    raw = rollout_body()
    raw["metadata"]["finalizers"] = []
    body, memo = kopf.Body(cast(Any, raw)), kopf.Memo(runtime=runtime)
    stopper, loop = start_loop(body, memo)
    try:
        await wait_until(lambda: copies_let_go(runtime) == 1)  # the first pass, at once
        assert kube.calls == []  # it sent nothing
        if finalizer_arrives:
            raw["metadata"]["finalizers"] = [KOPF_FINALIZER]
        await rollout_event(body=body, memo=memo)  # kopf's write, or any later event
        await wait_until(lambda: bool(kube.applied()))
    finally:
        stopper.set()
        await asyncio.wait_for(loop, 5.0)


# kopf's public decorators for change-tracked handlers (kopf stores what they register in
# a private registry, so the test records the calls instead of reading it).
CHANGING_DECORATORS = ("resume", "create", "update", "delete", "field")


def test_only_mirror_rollouts_have_a_deletion_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any on.create/update/delete handler that matches an object makes kopf write its
    change-tracking annotation after creation: a second write racing the first reconcile.
    A deleted rollout or tuning is forgotten when kopf stops its loop instead."""
    registered: list[tuple[str, dict[str, Any]]] = []

    def recorder(kind: str, decorator: Any) -> Any:
        def record(*args: Any, **kwargs: Any) -> Any:
            registered.append((kind, kwargs))
            return decorator(*args, **kwargs)

        return record

    for kind in CHANGING_DECORATORS:
        monkeypatch.setattr(kopf.on, kind, recorder(kind, getattr(kopf.on, kind)))
    registry = kopf.OperatorRegistry()
    register_rollout_handlers(registry)
    register_tuning_handlers(registry)
    assert [(kind, kwargs["id"]) for kind, kwargs in registered] == [("delete", "unmirror")]
    assert all(kwargs.get("when") is not None for _, kwargs in registered)


def test_the_finalizer_is_kopfs_own() -> None:
    assert kopf.OperatorSettings().persistence.finalizer == KOPF_FINALIZER


def test_a_mirror_rollouts_copy_also_waits_for_kopfs_annotation() -> None:
    raw = rollout_body()
    assert not awaits_kopf(kopf.Body(cast(Any, raw)), tracked=False)
    assert awaits_kopf(kopf.Body(cast(Any, raw)), tracked=True)
    raw["metadata"]["annotations"][KOPF_DIFFBASE] = "{}"
    assert not awaits_kopf(kopf.Body(cast(Any, raw)), tracked=True)
    raw["metadata"]["finalizers"] = []
    raw["metadata"]["deletionTimestamp"] = "2026-11-23T10:00:00Z"
    assert not awaits_kopf(kopf.Body(cast(Any, raw)), tracked=True)  # going: never wait


@pytest.mark.parametrize(
    "reason, forgotten",
    [
        (kopf.DaemonStoppingReason.RESOURCE_DELETED, True),
        (kopf.DaemonStoppingReason.OPERATOR_EXITING, False),
    ],
)
async def test_a_rollout_is_forgotten_when_its_loop_stops_for_its_deletion(
    reason: kopf.DaemonStoppingReason, forgotten: bool
) -> None:
    runtime = make_runtime(FakeKube(), FakeCluster())
    dropped: list[tuple[str, str]] = []
    runtime.forget = lambda namespace, name: dropped.append((namespace, name))  # type: ignore[method-assign]
    body, memo = kopf.Body(cast(Any, rollout_body())), kopf.Memo(runtime=runtime)
    stopper, loop = start_loop(body, memo)
    await wait_until(lambda: reconciles(runtime) >= 1)
    stopper.set(reason=reason)
    await asyncio.wait_for(loop, 5.0)
    assert dropped == ([(NAMESPACE, NAME)] if forgotten else [])
