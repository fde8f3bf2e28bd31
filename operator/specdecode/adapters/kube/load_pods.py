"""The shadow-load pods of a rollout as the API server has them: list, create, delete.

Bare Pods rather than a Job: a load pod runs until its stage run ends (it never
"completes"), and the operator, which already reconciles every few seconds, recreates one
that is gone; container restarts are the kubelet's (`restartPolicy: Always`), and the
pod's emptyDir keeps its results across them. Deletes go only to pods that exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.load.pods import (
    LOAD_ROLE,
    PLAN_LABEL,
    SHARD_LABEL,
    SIDE_LABEL,
    plan_hash,
)
from specdecode.adapters.load.splitter import SPLITTER_ROLE
from specdecode.adapters.render import ROLE_LABEL
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_flags import REPORT_PORT


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


def observed_load_pods(pods: Sequence[Mapping[str, Any]]) -> list[LoadPod]:
    """Load pods from the watched cache's JSON copies (no request to the API server)."""
    return [_observed(pod) for pod in pods if _labels(pod).get(ROLE_LABEL) == LOAD_ROLE]


def observed_splitter_pods(pods: Sequence[Mapping[str, Any]]) -> list[LoadPod]:
    """The Mirror splitter's pods (`adapters.load.splitter`), from the watched cache."""
    return [_observed(pod) for pod in pods if _labels(pod).get(ROLE_LABEL) == SPLITTER_ROLE]


def _labels(pod: Mapping[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = (pod.get("metadata") or {}).get("labels") or {}
    return labels


def _observed(pod: Mapping[str, Any]) -> LoadPod:
    labels = _labels(pod)
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    args = containers[0].get("args") or []
    endpoints = tuple(args[i + 1] for i, a in enumerate(args[:-1]) if a == "--endpoint")
    return LoadPod(
        name=str(pod["metadata"]["name"]),
        plan=labels.get(PLAN_LABEL, ""),
        side=labels.get(SIDE_LABEL, ""),
        shard=int(labels.get(SHARD_LABEL, "0")),
        ip=status.get("podIP") or None,
        ready=ready,
        deleting=pod["metadata"].get("deletionTimestamp") is not None,
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


def current_pods(pods: Sequence[LoadPod], plan: TrafficPlan) -> list[LoadPod]:
    """The pods (load pods or the splitter) of `plan` that are not being deleted."""
    hashed = plan_hash(plan)
    return [pod for pod in pods if pod.plan == hashed and not pod.deleting]
