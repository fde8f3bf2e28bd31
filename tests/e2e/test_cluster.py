"""The local cluster is a real cluster: versions, GPU scheduling, pods as processes, RBAC.

These are the "Done when" checks of the local-cluster issue: the built kubectl applies a GPU
Deployment, the real scheduler places it on fake GPU nodes, the node agent runs the pods as
processes answering HTTP on their pod IPs, the Service's EndpointSlice and Prometheus see
both, deleting the Deployment stops the processes, an oversized pod stays Pending with the
scheduler's reason, and a ServiceAccount without RBAC is denied and audited.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from localcluster.handle import LocalCluster
from localcluster.podnetwork import loopback_warning
from localcluster.process import is_alive
from localcluster.waiting import wait_for

pytestmark = pytest.mark.e2e

K8S_VERSION = "v1.34.4"
HELM_VERSION = "v3.19.5"
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.52"
GPU_NODES = {"gpu-h100-0", "gpu-h100-1", "gpu-h200-0", "gpu-l40s-0"}

GPU_APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {prometheus.io/scrape: "true", prometheus.io/port: "8080"}
    spec:
      containers:
        - name: web
          image: registry.k8s.io/e2e-test-images/agnhost:2.52
          args: [netexec, --http-port=8080]
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
          resources: {limits: {nvidia.com/gpu: "1"}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 8080, targetPort: 8080}]
"""


def _pod_state(cluster: LocalCluster, namespace: str, pod: str) -> dict[str, Any]:
    """What the agent recorded for a pod: pid, pod_ip, restarts, exit_code."""
    path = cluster.agent_dir / "pods" / namespace / pod / "state.json"
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def _http_get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=3) as reply:
        return str(reply.read().decode())


def test_versions_are_the_pinned_release(cluster: LocalCluster) -> None:
    kubectl = cluster.kubectl("version", "-o", "json", check=True)
    versions = json.loads(kubectl.stdout)
    assert versions["clientVersion"]["gitVersion"] == K8S_VERSION
    assert versions["serverVersion"]["gitVersion"] == K8S_VERSION
    helm = cluster.helm("version", "--short", check=True)
    assert helm.stdout.startswith(HELM_VERSION), helm.stdout


def _deploy_web(cluster: LocalCluster, core: Any, namespace: str) -> list[Any]:
    """Apply the 2-replica GPU Deployment and its Service; return the 2 Ready pods."""
    applied = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=GPU_APP)
    assert applied.returncode == 0, applied.stderr

    def ready_pods() -> list[Any] | None:
        pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
        ready = [
            p for p in pods
            if p.status.phase == "Running"
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        ]  # fmt: skip
        return ready if len(ready) == 2 else None

    pods: list[Any] = wait_for(ready_pods, timeout=60, message="2 Ready pods of Deployment web")
    return pods


def _container_pid(state: dict[str, Any], container: str = "web") -> int:
    pid = state["containers"][container]["pid"]
    assert isinstance(pid, int), state
    return pid


def test_gpu_deployment_runs_as_processes_and_stops_with_it(
    cluster: LocalCluster, kube_api: client.ApiClient, namespace: str
) -> None:
    core: Any = client.CoreV1Api(kube_api)  # models are all-Optional; tests index freely
    pods = _deploy_web(cluster, core, namespace)
    for pod in pods:
        assert pod.spec.node_name in GPU_NODES - {"gpu-h200-0"}, pod.spec.node_name
        node = core.read_node(pod.spec.node_name)
        assert node.metadata.labels["nvidia.com/gpu.product"].startswith("NVIDIA-")

    states = {p.metadata.name: _pod_state(cluster, namespace, p.metadata.name) for p in pods}
    pids = [_container_pid(state) for state in states.values()]
    for pod in pods:
        assert states[pod.metadata.name]["pod_ip"] == pod.status.pod_ip
        answer = _http_get(f"http://{pod.status.pod_ip}:8080/hostname")
        assert answer.strip() == pod.metadata.name
    assert all(is_alive(pid) for pid in pids)

    def both_up() -> list[dict[str, Any]] | None:
        series = cluster.prometheus_query(f'up{{namespace="{namespace}"}}')
        healthy = [s for s in series if s["value"][1] == "1"]
        return healthy if len(healthy) == 2 else None

    series = wait_for(both_up, timeout=30, message="Prometheus up == 1 for both pods")
    assert {s["metric"]["pod"] for s in series} == set(states)

    deleted = cluster.kubectl("delete", "-n", namespace, "deployment", "web", "--wait=false")
    assert deleted.returncode == 0, deleted.stderr
    wait_for(
        lambda: not any(is_alive(pid) for pid in pids),
        timeout=60,
        message=f"pod processes {pids} to exit after the Deployment was deleted",
    )


def test_service_endpointslice_lists_both_pods(
    cluster: LocalCluster, kube_api: client.ApiClient, namespace: str
) -> None:
    """Needs the netns pod network: the API server refuses 127.0.0.0/8 in EndpointSlices."""
    pods = _deploy_web(cluster, client.CoreV1Api(kube_api), namespace)
    pod_ips = {p.status.pod_ip for p in pods}
    loopback = sorted(ip for ip in pod_ips if ipaddress.ip_address(ip).is_loopback)
    assert not loopback, (
        f"pod IPs {loopback} are loopback addresses, which EndpointSlices may not hold "
        f"(pod network: {cluster.state.pod_network}). "
        + loopback_warning(cluster.state.pod_network_problem or "unknown")
    )
    discovery: Any = client.DiscoveryV1Api(kube_api)

    def endpoint_addresses() -> set[str] | None:
        slices = discovery.list_namespaced_endpoint_slice(
            namespace, label_selector="kubernetes.io/service-name=web"
        ).items
        found = {a for s in slices for e in s.endpoints or [] for a in e.addresses}
        return found if found == pod_ips else None

    wait_for(endpoint_addresses, timeout=30, message=f"EndpointSlice of web listing {pod_ips}")


def test_pod_asking_more_gpus_than_any_node_stays_pending(
    kube_api: client.ApiClient, namespace: str
) -> None:
    core: Any = client.CoreV1Api(kube_api)  # models are all-Optional; tests index freely
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="greedy"),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(
                    name="main",
                    image=AGNHOST,
                    args=["pause"],
                    resources=client.V1ResourceRequirements(limits={"nvidia.com/gpu": "16"}),
                )
            ],
            tolerations=[client.V1Toleration(key="nvidia.com/gpu", operator="Exists")],
        ),
    )
    core.create_namespaced_pod(namespace, pod)

    def unschedulable_reason() -> str | None:
        status = core.read_namespaced_pod("greedy", namespace).status
        for condition in status.conditions or []:
            if condition.type == "PodScheduled" and condition.reason == "Unschedulable":
                return str(condition.message)
        return None

    message = wait_for(unschedulable_reason, timeout=30, message="PodScheduled=False")
    assert "Insufficient nvidia.com/gpu" in message
    pod_now = core.read_namespaced_pod("greedy", namespace)
    assert pod_now.status.phase == "Pending"
    assert pod_now.spec.node_name is None


def test_tainted_h200_node_needs_a_toleration(kube_api: client.ApiClient, namespace: str) -> None:
    core: Any = client.CoreV1Api(kube_api)  # models are all-Optional; tests index freely

    def h200_pod(name: str, tolerate: bool) -> client.V1Pod:
        tolerations = [client.V1Toleration(key="nvidia.com/gpu", operator="Exists")]
        return client.V1Pod(
            metadata=client.V1ObjectMeta(name=name),
            spec=client.V1PodSpec(
                node_selector={"nvidia.com/gpu.product": "NVIDIA-H200"},
                tolerations=tolerations if tolerate else None,
                containers=[client.V1Container(name="main", image=AGNHOST, args=["pause"])],
            ),
        )

    core.create_namespaced_pod(namespace, h200_pod("intolerant", tolerate=False))
    core.create_namespaced_pod(namespace, h200_pod("tolerant", tolerate=True))
    node = wait_for(
        lambda: core.read_namespaced_pod("tolerant", namespace).spec.node_name,
        timeout=30,
        message="the tolerant pod to be bound",
    )
    assert node == "gpu-h200-0"

    def intolerant_reason() -> str | None:
        status = core.read_namespaced_pod("intolerant", namespace).status
        reasons = [c.message for c in status.conditions or [] if c.reason == "Unschedulable"]
        return reasons[0] if reasons else None

    assert "untolerated taint" in wait_for(intolerant_reason, timeout=30, message="rejection")


def _audit_events(audit_log: Path, username: str) -> list[dict[str, Any]]:
    events = (json.loads(line) for line in audit_log.read_text().splitlines() if line.strip())
    return [e for e in events if e.get("user", {}).get("username") == username]


def test_service_account_without_rbac_is_denied_and_audited(
    cluster: LocalCluster, kube_api: client.ApiClient, namespace: str
) -> None:
    core: Any = client.CoreV1Api(kube_api)  # models are all-Optional; tests index freely
    core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="nobody"))
    )
    kubeconfig = cluster.kubeconfig_for_service_account(namespace, "nobody")
    denied = cluster.kubectl("get", "pods", "-n", namespace, kubeconfig=kubeconfig)
    assert denied.returncode != 0
    assert "forbidden" in denied.stderr.lower(), denied.stderr
    username = f"system:serviceaccount:{namespace}:nobody"

    def denial() -> list[dict[str, Any]] | None:
        events = _audit_events(cluster.audit_log, username)
        refused = [e for e in events if e.get("responseStatus", {}).get("code") == 403]
        return refused or None

    event = wait_for(denial, timeout=10, message=f"a 403 audit event for {username}")[0]
    assert event["objectRef"]["resource"] == "pods"
    assert event["objectRef"]["namespace"] == namespace
