"""The pod network: pods live in the cluster's own network namespace, joined by a veth.

Checks what the netns pod network promises (see tests/cluster/localcluster/podnetwork.py):
pod processes run inside the namespace with their IP from the cluster's 10.244.<n>.0/24 on
the namespace side of the veth (gone again with the pod), the host reaches them, and a pod
with API credentials reaches the API server and Prometheus through the host-side relays.
Without root the cluster falls back to loopback pod IPs: these tests then fail and say why.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from localcluster.agent.logs import read_logs
from localcluster.agent.state import read_state
from localcluster.handle import LocalCluster
from localcluster.podnetwork import NETNS_MODE, PodNetworkPlan, loopback_warning
from localcluster.waiting import wait_for

pytestmark = pytest.mark.e2e

NETEXEC_POD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: registry.k8s.io/e2e-test-images/agnhost:2.53
    args: [netexec, --http-port=8080]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
"""

# Runs in the operator image: what the operator needs from inside the pod network.
CLIENT_SCRIPT = """
import os, urllib.request
from kubernetes import client, config
config.load_kube_config()
print("version", client.VersionApi().get_code().git_version, flush=True)
with urllib.request.urlopen(os.environ["SPECDECODE_PROMETHEUS_URL"] + "/-/ready", timeout=5) as r:
    print("prometheus", r.status, flush=True)
print("service", os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
"""


def require_netns(cluster: LocalCluster) -> PodNetworkPlan:
    """The cluster's pod network as `up` made it; fails (never skips) in the fallback."""
    state = cluster.state
    assert state.pod_network == NETNS_MODE, loopback_warning(state.pod_network_problem)
    assert state.pod_subnet and state.pod_host_address and state.pod_netns
    plan = PodNetworkPlan.for_state_dir(cluster.state_dir)  # names; the subnet may have moved
    assert state.pod_netns == plan.netns
    namespace_address = state.pod_host_address.rsplit(".", 1)[0] + ".254"
    return replace(plan, subnet=state.pod_subnet, host_address=state.pod_host_address,
                   namespace_address=namespace_address)  # fmt: skip


def apply(cluster: LocalCluster, namespace: str, manifest: str) -> None:
    result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    assert result.returncode == 0, result.stderr


def pod(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    result = cluster.kubectl("get", "pod", "-n", namespace, name, "-o", "json")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def namespace_addresses(plan: PodNetworkPlan) -> set[str]:
    shown = subprocess.run(
        ["ip", "-j", "-n", plan.netns, "-4", "addr", "show", "dev", plan.pod_device],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {a["local"] for i in json.loads(shown.stdout) for a in i.get("addr_info", [])}


def test_pod_runs_inside_the_namespace_with_its_ip_on_the_veth(
    cluster: LocalCluster, namespace: str
) -> None:
    plan = require_netns(cluster)
    apply(cluster, namespace, NETEXEC_POD)
    ready = wait_for(
        lambda: (
            (p := pod(cluster, namespace, "web"))["status"].get("podIP")
            and any(
                c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"]
            )
            and p
        ),
        timeout=30,
        message="pod web Ready with an IP",
    )
    pod_ip = ready["status"]["podIP"]
    assert ipaddress.ip_address(pod_ip) in ipaddress.ip_network(plan.subnet)
    assert pod_ip not in (plan.host_address, plan.namespace_address)
    assert pod_ip in namespace_addresses(plan)
    state = read_state(cluster.agent_dir / "pods" / namespace / "web") or {}
    pid = state["containers"]["web"]["pid"]
    assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{plan.netns}").st_ino
    assert os.stat(f"/proc/{pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
    with urllib.request.urlopen(f"http://{pod_ip}:8080/hostname", timeout=5) as answer:
        assert answer.read().decode().strip() == "web"  # from the host, through the veth

    deleted = cluster.kubectl("delete", "pod", "-n", namespace, "web", "--wait=true")
    assert deleted.returncode == 0, deleted.stderr
    wait_for(
        lambda: pod_ip not in namespace_addresses(plan),
        timeout=15,
        message=f"pod IP {pod_ip} to leave {plan.pod_device}",
    )
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_operator_pod_reaches_api_server_and_prometheus_through_relays(
    cluster: LocalCluster, namespace: str
) -> None:
    plan = require_netns(cluster)
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "client"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "ghcr.io/specdecode-operator/operator:dev",
                    "command": ["python", "-c", CLIENT_SCRIPT],
                    "env": [{"name": "SPECDECODE_PROMETHEUS_URL", "value": "http://nowhere:9"}],
                }
            ],
        },
    }
    apply(cluster, namespace, json.dumps(manifest))
    phase = wait_for(
        lambda: (
            pod(cluster, namespace, "client")["status"].get("phase") in ("Succeeded", "Failed")
            and pod(cluster, namespace, "client")["status"]["phase"]
        ),
        timeout=60,
        message="the client pod to finish",
    )
    logs = read_logs(cluster.agent_dir, namespace, "client")
    assert phase == "Succeeded", logs
    apiserver_port = cluster.state.ports["kube-apiserver"]
    assert "version v1." in logs
    assert "prometheus 200" in logs
    assert f"service {plan.host_address} {apiserver_port}" in logs
