"""Read the Deployment a `workloadRef` rollout judges, and the Services that may select it.

Reads only: the operator never writes the source (GitOps). Two requests per reconcile of
an adopted rollout (a GET and a namespace's Service LIST), because the watched cache holds
only objects labelled as the operator's and the source must stay unlabelled.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients


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
