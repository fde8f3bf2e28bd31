"""The Deployment a `workloadRef` rollout judges: read it and the Services that may select
it; under the Patch strategy, apply (and withdraw) the promoted args alone.

Read directly (a GET and a Service LIST), since the source must stay unlabelled and the
cache holds only labelled objects. Under Patch one non-forced server-side apply under its
own field manager sets the vLLM args alone. More: docs/internals.md.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.kube.owned import ForeignObject
from specdecode.adapters.kube.tunings import apply_config_map, delete_config_map
from specdecode.adapters.render import Owner


def promotion_field_manager(field_manager: str) -> str:
    """The field manager of the Patch promotion's apply, beside the children's (the
    operator's `field_manager`): the source's managedFields show what the promotion set."""
    return f"{field_manager}-promotion"


def read_source(
    clients: KubeClients, namespace: str, name: str
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The Deployment as JSON (None if absent), and the namespace's Services as JSON."""
    try:
        deployment = clients.apps.read_namespaced_deployment(name, namespace)
    except ApiException as error:
        if error.status != 404:
            raise
        return None, []
    services = clients.core.list_namespaced_service(namespace).items
    as_json = clients.api.sanitize_for_serialization
    return as_json(deployment), [as_json(service) for service in services]


def _apply_body(namespace: str, name: str, spec: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
    }
    if spec is not None:
        body["spec"] = spec
    return body


def apply_promotion(
    clients: KubeClients,
    namespace: str,
    name: str,
    container: str,
    args: list[str],
    manager: str,
) -> str | None:
    """Server-side apply of the vLLM container's args alone, under `manager`, never forced.

    Returns None when applied, else the conflict as the API server names it (which other
    manager owns the args): the owner's field is left as it is.
    """
    containers = [{"name": container, "args": args}]
    body = _apply_body(namespace, name, {"template": {"spec": {"containers": containers}}})
    try:
        clients.server_side_apply(body, manager, force=False)
    except ApiException as error:
        if error.status != 409:
            raise
        return conflict_text(error)
    return None


def withdraw_promotion(clients: KubeClients, namespace: str, name: str, manager: str) -> None:
    """Apply nothing under `manager`: server-side apply removes the fields only it owned
    (the args it set), which returns the source to what its owner wrote."""
    clients.server_side_apply(_apply_body(namespace, name, None), manager, force=False)


def conflict_text(error: ApiException) -> str:
    """ "conflict with "<manager>" ... at <field>" for each cause of a 409 apply conflict."""
    try:
        details = json.loads(error.body or "{}").get("details") or {}
    except (TypeError, ValueError):
        details = {}
    causes = [
        f"{cause.get('message')} at {cause.get('field')}" for cause in details.get("causes") or []
    ]
    return "; ".join(causes) or str(error.reason)


def owns_args(deployment: dict[str, Any] | None, manager: str) -> bool:
    """Whether `manager` applied a container's args of the object (its managedFields say
    so): once the owner writes them, they are the owner's, and nothing is returned."""
    entries = ((deployment or {}).get("metadata") or {}).get("managedFields") or []
    return any(
        e.get("manager") == manager
        and e.get("operation") == "Apply"
        and '"f:args"' in json.dumps(e.get("fieldsV1") or {})
        for e in entries
    )


def promotion_files_name(rollout: str) -> str:
    """The ConfigMap keeping a passed config's change for the source's owner."""
    return f"{rollout}-promotion"


def keep_promotion_files(
    clients: KubeClients, owner: Owner, files: dict[str, str], manager: str
) -> ForeignObject | None:
    """Write the promotion ConfigMap (owned by the rollout, so deleting it deletes them);
    an object of that name the rollout does not own is left untouched and returned."""
    name = promotion_files_name(owner.name)
    try:
        found = clients.core.read_namespaced_config_map(name, owner.namespace)
    except ApiException as error:
        if error.status != 404:
            raise
        found = None
    if found is not None:
        refs = (found.metadata.owner_references if found.metadata else None) or []
        uids = {str(ref.uid) for ref in refs}
        if owner.uid not in uids:
            return ForeignObject("ConfigMap", owner.namespace, name)
    try:  # not forced when it was absent: one created meanwhile is not taken over
        apply_config_map(clients, owner, name, files, manager, force=found is not None)
    except ApiException as error:
        if error.status != 409:
            raise
        return ForeignObject("ConfigMap", owner.namespace, name)
    return None


def read_promotion_files(clients: KubeClients, owner: Owner) -> dict[str, str] | None:
    """The data of the rollout's promotion ConfigMap as the cluster holds it; None when
    there is none the rollout owns (absent, or another's): what a restarted process wrote
    before, re-derived from the cluster rather than remembered."""
    try:
        found = clients.core.read_namespaced_config_map(
            promotion_files_name(owner.name), owner.namespace
        )
    except ApiException as error:
        if error.status != 404:
            raise
        return None
    refs = (found.metadata.owner_references if found.metadata else None) or []
    if owner.uid not in {str(ref.uid) for ref in refs}:
        return None
    return dict(found.data or {})


def drop_promotion_files(clients: KubeClients, owner: Owner) -> None:
    """Delete the promotion ConfigMap once its patch no longer stands (a new analysis)."""
    delete_config_map(clients, owner.namespace, promotion_files_name(owner.name))
