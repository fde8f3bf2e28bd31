"""Watches of what rollouts own or read: indexes (the cache) and wake-ups (the triggers).

Why: one kopf watch per kind feeds an index (`cache.ClusterView` reads it, so observing costs
no request) and a handler that wakes the rollout's loop. Owned kinds are watched with the
label selector `specdecode.io/rollout`; kopf LISTs before any handler runs, so "not listed
yet" is never "absent". Handlers are async: the wake-up flags are asyncio objects.
More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from specdecode.adapters.kube.cache import (
    ROLLOUT_LABEL,
    ClusterView,
    namespace_key,
    rollout_key,
    snapshot,
)
from specdecode.adapters.kube.route_mirrors import ROUTE_GROUP, ROUTE_PLURAL, ROUTE_VERSION
from specdecode.reconciler.runtime import Runtime

DEPLOYMENTS: tuple[str, str, str] = ("apps", "v1", "deployments")
SERVICES: tuple[str, str] = ("v1", "services")
PODS: tuple[str, str] = ("v1", "pods")
ROUTES: tuple[str, str, str] = (ROUTE_GROUP, ROUTE_VERSION, ROUTE_PLURAL)
OWNED_KINDS: dict[str, tuple[str, str] | tuple[str, str, str]] = {
    "deployments": DEPLOYMENTS,
    "services": SERVICES,
    "pods": PODS,
}
INDEX_IDS = {kind: f"rollout_{kind}" for kind in (*OWNED_KINDS, "routes")}


def configure_watches(settings: kopf.OperatorSettings) -> None:
    """Server-side label selectors: only objects labelled with a rollout are sent to us."""
    for resource in OWNED_KINDS.values():
        settings.watching.label_selectors[resource] = ROLLOUT_LABEL


def attach_cluster(runtime: Runtime, handler_kwargs: Mapping[str, Any]) -> ClusterView:
    """Point `runtime.cluster` at kopf's indexes, which kopf passes to every handler."""
    view = runtime.cluster
    if not view.ready:
        view.attach(
            deployments=handler_kwargs[INDEX_IDS["deployments"]],
            services=handler_kwargs[INDEX_IDS["services"]],
            pods=handler_kwargs[INDEX_IDS["pods"]],
            routes=handler_kwargs[INDEX_IDS["routes"]],
        )
    return view


async def index_by_rollout(body: kopf.Body, **_: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """One entry per labelled object, under (namespace, rollout)."""
    key = rollout_key(body)
    return {key: snapshot(body)} if key is not None else {}


async def index_by_namespace(body: kopf.Body, **_: Any) -> dict[str, dict[str, Any]]:
    """One entry per HTTPRoute, under its namespace."""
    return {namespace_key(body): snapshot(body)}


async def child_event(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A child or pod of a rollout changed, appeared or went: reconcile that rollout."""
    key = rollout_key(body)
    if key is not None:
        runtime: Runtime = memo["runtime"]
        runtime.wakeups.wake(f"{key[0]}/{key[1]}")


async def route_event(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """An HTTPRoute changed: reconcile the rollouts of its namespace (few; cheap)."""
    runtime: Runtime = memo["runtime"]
    runtime.wakeups.wake_namespace(namespace_key(body))


def register_watches(registry: kopf.OperatorRegistry) -> None:
    """Indexes and wake-up handlers for every watched kind."""
    labelled = {ROLLOUT_LABEL: kopf.PRESENT}
    for kind, resource in OWNED_KINDS.items():
        kopf.index(*resource, registry=registry, labels=labelled, id=INDEX_IDS[kind])(
            index_by_rollout
        )
        kopf.on.event(*resource, registry=registry, labels=labelled, id=f"wake-{kind}")(child_event)
    kopf.index(*ROUTES, registry=registry, id=INDEX_IDS["routes"])(index_by_namespace)
    kopf.on.event(*ROUTES, registry=registry, id="wake-routes")(route_event)
