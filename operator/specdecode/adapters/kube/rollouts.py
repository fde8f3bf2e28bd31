"""Reading and writing the SpecDecodeRollout resource itself: status and the action annotation.

Status is written whole and only on top of the object it was computed from (its
resourceVersion), so a stale copy can neither undo a newer status nor announce a transition
twice (409: `StaleRollout`). The action annotation is removed only if unchanged, so a
user's newer action is never swallowed. More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.render import Owner
from specdecode.api import ACTION_ANNOTATION, GROUP, PLURAL, VERSION
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.api.status_budget import within_budget


@dataclass(frozen=True)
class RolloutRef:
    """The identity of the rollout being reconciled, and the version it was read at."""

    namespace: str
    name: str
    uid: str
    generation: int
    resource_version: str = ""

    @property
    def key(self) -> str:
        """ "namespace/name", the key of per-rollout runtime state."""
        return f"{self.namespace}/{self.name}"

    @property
    def owner(self) -> Owner:
        """The owner of the rollout's children and load pods."""
        return Owner(self.name, self.namespace, self.uid)


@dataclass(frozen=True)
class RolloutRead:
    """One version of the rollout as the watch delivered it: its identity (`ref`, with the
    resourceVersion) and the spec, status and annotations read together, before anything
    is awaited, so the reconcile decides on one consistent object."""

    ref: RolloutRef
    spec: Mapping[str, Any]
    status: Mapping[str, Any] | None
    annotations: Mapping[str, str]


class StaleRollout(Exception):
    """The rollout changed since the object a decision was computed from (409 Conflict)."""


def status_patch_body(
    status: SpecDecodeRolloutStatus, resource_version: str | None = None
) -> dict[str, Any]:
    """The merge-patch body that makes the stored status equal `status` (within its size
    budget: `api.status_budget`), guarded by `resource_version` when given."""
    written = within_budget(status)
    body: dict[str, Any] = {"status": written.model_dump(mode="json", by_alias=True)}
    if resource_version:
        body["metadata"] = {"resourceVersion": resource_version}
    return body


def patch_status(
    clients: KubeClients,
    namespace: str,
    name: str,
    status: SpecDecodeRolloutStatus,
    resource_version: str | None = None,
) -> str | None:
    """Replace the rollout's status with the computed one (status subresource).

    Returns the new resourceVersion (None if the rollout is gone); raises `StaleRollout`
    if `resource_version` is no longer the current one.
    """
    try:
        answer = clients.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, name, status_patch_body(status, resource_version)
        )
    except ApiException as error:
        if error.status == 409:
            raise StaleRollout(f"{namespace}/{name} changed since {resource_version}") from error
        if error.status == 404:
            return None
        raise
    metadata = answer.get("metadata") or {} if isinstance(answer, dict) else {}
    version = metadata.get("resourceVersion")
    return str(version) if version else None


def clear_action(clients: KubeClients, namespace: str, name: str, value: str) -> bool:
    """Remove the action annotation if it still holds `value`; False if it changed since."""
    key = ACTION_ANNOTATION.replace("~", "~0").replace("/", "~1")
    patch = [
        {"op": "test", "path": f"/metadata/annotations/{key}", "value": value},
        {"op": "remove", "path": f"/metadata/annotations/{key}"},
    ]
    try:
        clients.custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            name,
            patch,
            _content_type="application/json-patch+json",
        )
    except ApiException as error:
        if error.status in (404, 422):  # gone, or the value changed: a newer action waits
            return False
        raise
    return True
