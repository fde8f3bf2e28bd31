"""Applying a rollout's children only where the rollout owns them: never take over.

Why: the watched cache holds only labelled objects, so a user's object named like a child
looks absent, and applying over it would take it over (and garbage-collect it with the
rollout). An object is applied only when it carries our ownerReference (a name the cache
lacks is first tried with a dry-run create); anybody else's is returned (`ForeignObject`)
for the rollout to report (`adapters.kube.findings`). More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from kubernetes.client import ApiException

from specdecode.adapters.kube.cache import JsonObject
from specdecode.adapters.kube.client import KubeClients, read_if_present


@dataclass(frozen=True)
class ForeignObject:
    """An object named like a child that the operator does not own: left untouched."""

    kind: str
    namespace: str
    name: str

    def message(self) -> str:
        """What the rollout's Degraded condition says, and how to resolve it."""
        return (
            f"{self.kind} {self.namespace}/{self.name} already exists and is not owned by this "
            "rollout (no ownerReference to it), so the operator leaves it untouched: rename "
            f"the rollout, or delete the {self.kind} if nothing else uses it"
        )


def owner_uids(obj: Mapping[str, Any]) -> set[str]:
    """The uids of an object's ownerReferences."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return {str(ref.get("uid")) for ref in refs}


async def apply_children(
    clients: KubeClients,
    objects: Sequence[dict[str, Any]],
    manager: str,
    observed: Iterable[JsonObject] = (),
) -> list[ForeignObject]:
    """Apply each object (the caller passes only stale ones, and what the cache shows), all
    at once, each in a worker thread: a new rollout's Deployments and Services do not wait
    in line. Only objects the operator owns are changed; the others are returned.

    Owned means an ownerReference to the uid the rendered object names. The cache watches
    only labelled objects, so an absent child may still exist: a dry-run create asks
    first (`_name_is_free`), and only a taken name costs one GET, to tell our own (the
    watch lags) from somebody else's.
    """
    by_name = {(o.get("kind"), (o.get("metadata") or {}).get("name")): o for o in observed}
    found = await asyncio.gather(
        *(
            asyncio.to_thread(
                _apply_owned, clients, obj, manager, by_name.get((obj["kind"], _name(obj)))
            )
            for obj in objects
        )
    )
    return [foreign for foreign in found if foreign is not None]


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def _apply_owned(
    clients: KubeClients, obj: dict[str, Any], manager: str, cached: JsonObject | None
) -> ForeignObject | None:
    ours = owner_uids(obj)
    foreign = ForeignObject(obj["kind"], obj["metadata"]["namespace"], _name(obj))
    if cached is not None:
        if not ours & owner_uids(cached):
            return foreign
        clients.server_side_apply(obj, manager)
        return None
    if _name_is_free(clients, obj):
        clients.server_side_apply(obj, manager, force=False)
        return None
    existing = _read_owner_uids(clients, foreign)
    if existing is not None and not ours & existing:
        return foreign
    clients.server_side_apply(obj, manager)  # ours, created before the watch told us
    return None


def _name_is_free(clients: KubeClients, obj: dict[str, Any]) -> bool:
    """Whether no object of this kind and name exists: a dry-run create (nothing is stored,
    nothing is changed; AlreadyExists says it is taken).

    Why not create for real: a created object's fields would belong to an Update, which a
    later apply can never prune. Why not apply without force at once: it would add our
    fields to somebody else's object wherever they do not conflict (labels, the
    ownerReference). What is left is a race of the dry run's round trip: an object created
    by someone else in between is applied to without force (conflicting fields refused).
    """
    namespace, body = obj["metadata"]["namespace"], cast(Any, obj)
    try:
        if obj["kind"] == "Deployment":
            clients.apps.create_namespaced_deployment(namespace, body, dry_run="All")
        else:
            clients.core.create_namespaced_service(namespace, body, dry_run="All")
    except ApiException as error:
        if error.status == 409:
            return False
        raise
    return True


def _read_owner_uids(clients: KubeClients, child: ForeignObject) -> set[str] | None:
    """The ownerReference uids of the named Deployment or Service; None if absent."""
    name, namespace = child.name, child.namespace
    found: Any
    if child.kind == "Deployment":
        found = read_if_present(lambda: clients.apps.read_namespaced_deployment(name, namespace))
    else:
        found = read_if_present(lambda: clients.core.read_namespaced_service(name, namespace))
    if found is None:
        return None
    return {str(ref.uid) for ref in found.metadata.owner_references or []}
