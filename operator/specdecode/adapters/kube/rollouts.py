"""Reading and writing the SpecDecodeRollout resource itself: status and the action annotation.

Status is written whole (a merge patch with explicit nulls for fields that went away), since
the domain computes it whole. The action annotation is removed with a JSON patch guarded by
a `test` of its value, so a user's newer action written meanwhile is never swallowed.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.api import ACTION_ANNOTATION, GROUP, PLURAL, VERSION
from specdecode.api.status import SpecDecodeRolloutStatus


def status_patch_body(status: SpecDecodeRolloutStatus) -> dict[str, Any]:
    """The merge-patch body that makes the stored status equal `status`."""
    return {"status": status.model_dump(mode="json", by_alias=True)}


def patch_status(
    clients: KubeClients, namespace: str, name: str, status: SpecDecodeRolloutStatus
) -> None:
    """Replace the rollout's status with the computed one (status subresource)."""
    clients.custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, name, status_patch_body(status)
    )


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
