"""Node registration and heartbeats: the Node object, its status and its Lease.

The node lifecycle controller marks a node NotReady when neither its Lease nor its Ready
condition was renewed within the grace period (40 s by default), so both are renewed every
HEARTBEAT_SECONDS.
"""

from __future__ import annotations

import logging
import os
import platform
import threading
from datetime import UTC, datetime
from typing import Any

from .config import NodeConfig
from .kubeapi import MERGE, STRATEGIC, ApiError, KubeRest
from .podstatus import rfc3339

HEARTBEAT_SECONDS = 10.0
LEASE_SECONDS = 40
KUBELET_VERSION = "v1.34.4"
HOST_IP = "127.0.0.1"
log = logging.getLogger(__name__)

_CONDITIONS = (
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def node_object(node: NodeConfig) -> dict[str, Any]:
    """The Node's metadata and spec."""
    labels = {
        **node.labels,
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": labels},
        "spec": {"taints": node.taints},
    }


def node_status(node: NodeConfig, since: str, kubelet_port: int = 0) -> dict[str, Any]:
    """A kubelet-like status: capacity, conditions, addresses, nodeInfo."""
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    if node.gpus > 0:
        capacity["nvidia.com/gpu"] = str(node.gpus)
    now = rfc3339()
    conditions = [
        {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": since,
        }
        for kind, status, reason, message in _CONDITIONS
    ]
    return {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": conditions,
        # No Hostname address: the API server would prefer it for `kubectl logs`, and the
        # node names do not resolve.
        "addresses": [{"type": "InternalIP", "address": HOST_IP}],
        "nodeInfo": {
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "containerRuntimeVersion": "localagent://0.1.0",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "osImage": "specdecode local node agent",
            "kernelVersion": platform.release(),
            "machineID": node.name,
            "systemUUID": node.name,
            "bootID": str(os.getpid()),
        },
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
    }


class NodeKeeper:
    """Registers the nodes and keeps them Ready until stopped."""

    def __init__(
        self,
        api: KubeRest,
        nodes: list[NodeConfig],
        stop: threading.Event,
        kubelet_port: int = 0,
    ) -> None:
        self._api = api
        self._kubelet_port = kubelet_port
        self._nodes = nodes
        self._stop = stop
        self._since = rfc3339()

    def register(self) -> None:
        """Create each Node (or update labels/taints of an existing one), then its status."""
        for node in self._nodes:
            body = node_object(node)
            try:
                self._api.call("POST", "/api/v1/nodes", body=body)
                log.info("registered node %s", node.name)
            except ApiError as error:
                if error.status != 409:
                    raise
                self._api.call("PATCH", f"/api/v1/nodes/{node.name}", body=body, content_type=MERGE)
            self._heartbeat(node)

    def run(self) -> None:
        """Heartbeat loop (a thread): survive API hiccups, stop when asked."""
        while not self._stop.wait(HEARTBEAT_SECONDS):
            for node in self._nodes:
                try:
                    self._heartbeat(node)
                except Exception as error:  # keep beating for the other nodes
                    log.warning("heartbeat for %s failed: %s", node.name, error)

    def _heartbeat(self, node: NodeConfig) -> None:
        self._api.call(
            "PATCH",
            f"/api/v1/nodes/{node.name}/status",
            body={"status": self._status_patch(node)},
            content_type=STRATEGIC,
        )
        self._renew_lease(node)

    def _status_patch(self, node: NodeConfig) -> dict[str, Any]:
        """The status with its address list replaced, not merged (older agents added more)."""
        status = node_status(node, self._since, self._kubelet_port)
        status["addresses"] = [*status["addresses"], {"$patch": "replace"}]
        return status

    def _renew_lease(self, node: NodeConfig) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node.name}"
        try:
            self._api.call("PATCH", path, body={"spec": {"renewTime": now}}, content_type=MERGE)
        except ApiError as error:
            if error.status != 404:
                raise
            self._api.call(
                "POST",
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                body={
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": node.name, "namespace": "kube-node-lease"},
                    "spec": {
                        "holderIdentity": node.name,
                        "leaseDurationSeconds": LEASE_SECONDS,
                        "renewTime": now,
                    },
                },
            )
