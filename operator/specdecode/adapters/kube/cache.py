"""The operator's watched view of the objects rollouts own: read from memory, never listed.

kopf keeps one watch per kind and feeds every event into an index; this module defines an
index entry (`snapshot`, JSON-shaped, without `managedFields`) and `ClusterView`, the read
side the reconciler uses, so observing a rollout's children costs no API request.
More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from specdecode.adapters.render import ROLLOUT_LABEL

__all__ = ["ROLLOUT_LABEL", "ClusterView", "labels_of", "named", "rollout_key", "snapshot"]

COMPONENT_LABEL = "app.kubernetes.io/component"

JsonObject = Mapping[str, Any]
RolloutKey = tuple[str, str]  # (namespace, rollout name)
ObjectIndex = Mapping[Any, Collection[JsonObject]]


def snapshot(body: Mapping[str, Any]) -> dict[str, Any]:
    """What an index keeps of a watched object: everything but `metadata.managedFields`.

    Shallow copies only: the watch stream builds a new dict per event and never mutates
    an old one, so sharing the nested values is safe and keeps memory flat.
    """
    metadata = {k: v for k, v in (body.get("metadata") or {}).items() if k != "managedFields"}
    return {**{k: v for k, v in body.items() if k != "metadata"}, "metadata": metadata}


def rollout_key(body: Mapping[str, Any]) -> RolloutKey | None:
    """(namespace, rollout) of an object labelled `specdecode.io/rollout`, else None."""
    metadata = body.get("metadata") or {}
    rollout = (metadata.get("labels") or {}).get(ROLLOUT_LABEL)
    if not rollout:
        return None
    return (str(metadata.get("namespace") or ""), str(rollout))


def namespace_key(body: Mapping[str, Any]) -> str:
    """The namespace of an object (the key HTTPRoutes are indexed by)."""
    return str((body.get("metadata") or {}).get("namespace") or "")


def _under(index: ObjectIndex, key: Any) -> list[JsonObject]:
    return list(index[key]) if key in index else []


@dataclass
class ClusterView:
    """Read access to the watched objects of every rollout.

    `ready` is False until the operator's indexes are attached (kopf fills them from an
    initial LIST before any handler runs); a reconcile must not treat "not attached" as
    "absent", or it would recreate children that exist.
    """

    deployments: ObjectIndex = field(default_factory=dict)
    services: ObjectIndex = field(default_factory=dict)
    pods: ObjectIndex = field(default_factory=dict)
    routes: ObjectIndex = field(default_factory=dict)
    ready: bool = False

    def attach(
        self,
        deployments: ObjectIndex,
        services: ObjectIndex,
        pods: ObjectIndex,
        routes: ObjectIndex,
    ) -> None:
        """Point the view at the live indexes (idempotent; called by the handlers)."""
        self.deployments, self.services, self.pods, self.routes = (
            deployments,
            services,
            pods,
            routes,
        )
        self.ready = True

    def rollout_deployments(self, namespace: str, rollout: str) -> list[JsonObject]:
        """The Deployments labelled with the rollout (engines; the lead's load workloads too)."""
        return _under(self.deployments, (namespace, rollout))

    def rollout_services(self, namespace: str, rollout: str) -> list[JsonObject]:
        """The Services labelled with the rollout."""
        return _under(self.services, (namespace, rollout))

    def rollout_pods(
        self, namespace: str, rollout: str, component: str | None = None
    ) -> list[JsonObject]:
        """Pods labelled with the rollout; with `component`, only those whose
        `app.kubernetes.io/component` label equals it (e.g. "shadow-load")."""
        pods = _under(self.pods, (namespace, rollout))
        if component is None:
            return pods
        return [p for p in pods if labels_of(p).get(COMPONENT_LABEL) == component]

    def labelled_owned_by(self, namespace: str, uid: str) -> set[str]:
        """Rollout-label values of the namespace's Deployments, Services and Pods that `uid`
        owns (a tuning's trials: whatever its spec or state says, what exists can be cleaned
        up, and nothing of another owner is touched). A scan of the indexes, in memory."""
        found: set[str] = set()
        for index in (self.deployments, self.services, self.pods):
            for key in list(index):
                if key[0] != namespace:
                    continue
                for obj in index[key]:
                    owners = (obj.get("metadata") or {}).get("ownerReferences") or []
                    if any(owner.get("uid") == uid for owner in owners):
                        found.add(key[1])
                        break
        return found

    def namespace_routes(self, namespace: str) -> list[JsonObject]:
        """Every HTTPRoute of the namespace."""
        return _under(self.routes, namespace)


def labels_of(obj: JsonObject) -> dict[str, str]:
    """An object's labels (empty if none)."""
    labels: dict[str, str] = (obj.get("metadata") or {}).get("labels") or {}
    return labels


def named(objects: Iterable[JsonObject], name: str) -> JsonObject | None:
    """The object called `name` among `objects`, if any."""
    return next((o for o in objects if (o.get("metadata") or {}).get("name") == name), None)
