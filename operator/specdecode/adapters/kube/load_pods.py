"""The shadow-load pods of a rollout as the API server has them: list, create, delete.

Bare Pods rather than a Job: a load pod runs until its stage run ends (it never
"completes"), and the operator, which already reconciles every few seconds, recreates one
that is gone; container restarts are the kubelet's (`restartPolicy: Always`), and the
pod's emptyDir keeps its results across them. Deletes go only to pods that exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.load.pods import (
    LOAD_ROLE,
    PLAN_LABEL,
    REPORT_PORT,
    SHARD_LABEL,
    SIDE_LABEL,
)
from specdecode.adapters.render import ROLE_LABEL, ROLLOUT_LABEL


@dataclass(frozen=True)
class LoadPod:
    """One load pod as observed."""

    name: str
    plan: str
    side: str
    shard: int
    ip: str | None
    ready: bool
    deleting: bool
    endpoints: tuple[str, ...]  # the engine URLs it was started with

    @property
    def report_url(self) -> str | None:
        """Where its results are served, once it has an address."""
        if self.ip is None:
            return None
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"http://{host}:{REPORT_PORT}"


def list_load_pods(clients: KubeClients, namespace: str, rollout: str) -> list[LoadPod]:
    """Every load pod of the rollout (any stage run)."""
    selector = f"{ROLLOUT_LABEL}={rollout},{ROLE_LABEL}={LOAD_ROLE}"
    pods = clients.core.list_namespaced_pod(namespace, label_selector=selector).items
    return [_observed(pod) for pod in pods]


def _observed(pod: Any) -> LoadPod:
    labels = pod.metadata.labels or {}
    status = pod.status
    ready = (
        any(c.type == "Ready" and c.status == "True" for c in (status.conditions or []))
        if status
        else False
    )
    args = pod.spec.containers[0].args or [] if pod.spec and pod.spec.containers else []
    endpoints = tuple(args[i + 1] for i, a in enumerate(args[:-1]) if a == "--endpoint")
    return LoadPod(
        name=pod.metadata.name,
        plan=labels.get(PLAN_LABEL, ""),
        side=labels.get(SIDE_LABEL, ""),
        shard=int(labels.get(SHARD_LABEL, "0")),
        ip=(status.pod_ip if status else None) or None,
        ready=ready,
        deleting=pod.metadata.deletion_timestamp is not None,
        endpoints=endpoints,
    )


def create_pod(clients: KubeClients, manifest: dict[str, Any]) -> None:
    """Create one pod; one that already exists (a concurrent create) is fine."""
    try:
        namespace = manifest["metadata"]["namespace"]
        clients.core.create_namespaced_pod(namespace, cast(Any, manifest))
    except ApiException as error:
        if error.status != 409:
            raise


def delete_pod(clients: KubeClients, namespace: str, name: str) -> None:
    """Delete one pod; one already gone is fine."""
    try:
        clients.core.delete_namespaced_pod(name, namespace, grace_period_seconds=5)
    except ApiException as error:
        if error.status != 404:
            raise
