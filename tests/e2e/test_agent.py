"""The node agent as kubelet: env and volumes, restarts with exit codes and last log lines,
probes, image errors, and process cleanup on deletion (see tests/cluster/localcluster/agent).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localcluster.agent.logs import read_logs
from localcluster.agent.state import read_state
from localcluster.handle import LocalCluster
from localcluster.waiting import wait_for

pytestmark = pytest.mark.e2e

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"


def apply(cluster: LocalCluster, namespace: str, manifest: str) -> None:
    result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    assert result.returncode == 0, result.stderr


def get_pod(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    result = cluster.kubectl("get", "pod", "-n", namespace, name, "-o", "json")
    assert result.returncode == 0, result.stderr
    pod: dict[str, Any] = json.loads(result.stdout)
    return pod


def container_status(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    statuses = get_pod(cluster, namespace, name).get("status", {}).get("containerStatuses") or [{}]
    status: dict[str, Any] = statuses[0]
    return status


def condition(pod: dict[str, Any], kind: str) -> str | None:
    for entry in pod.get("status", {}).get("conditions") or []:
        if entry["type"] == kind:
            return str(entry["status"])
    return None


def is_alive(pid: int) -> bool:
    """Running and not a zombie (killed grandchildren may wait for init to reap them)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Live processes of a process group, read from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def test_env_volumes_and_variable_expansion(cluster: LocalCluster, namespace: str) -> None:
    apply(
        cluster,
        namespace,
        """
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {greeting: hello, app.yaml: "key: value\\n"}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {password: hunter2}
---
apiVersion: v1
kind: Pod
metadata: {name: show}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c"]
    args: ["echo $(GREETING) $(PASS) ip=$(MY_IP) $$(kept); cat $(CFG); cat /etc/cfg/app.yaml"]
    env:
    - {name: GREETING, valueFrom: {configMapKeyRef: {name: cfg, key: greeting}}}
    - {name: PASS, valueFrom: {secretKeyRef: {name: sec, key: password}}}
    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: CFG, value: /etc/cfg/app.yaml}
    volumeMounts: [{name: cfgvol, mountPath: /etc/cfg}]
  volumes: [{name: cfgvol, configMap: {name: cfg}}]
""",
    )
    wait_for(
        lambda: get_pod(cluster, namespace, "show")["status"].get("phase") == "Succeeded",
        timeout=30,
        message="pod show to succeed",
    )
    pod_ip = get_pod(cluster, namespace, "show")["status"]["podIP"]
    lines = read_logs(cluster.agent_dir, namespace, "show").splitlines()
    # `$$(kept)` reaches the shell as `$(kept)`: a command substitution of a missing command.
    assert lines[-3].endswith(f"hello hunter2 ip={pod_ip}")
    assert lines[-2:] == ["key: value", "key: value"]


def test_crashing_container_restarts_and_reports_exit_code_and_logs(
    cluster: LocalCluster, namespace: str
) -> None:
    apply(
        cluster,
        namespace,
        """
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - {name: main, image: busybox, command: ["sh", "-c", "echo about to fail; exit 3"]}
""",
    )

    def restarted() -> dict[str, Any] | None:
        status = container_status(cluster, namespace, "crash")
        return status if status.get("restartCount", 0) >= 1 else None

    status = wait_for(restarted, timeout=30, message="a restart of the crashing container")
    last = status["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (3, "Error")
    assert "about to fail" in last["message"]
    wait_for(
        lambda: (
            container_status(cluster, namespace, "crash")
            .get("state", {})
            .get("waiting", {})
            .get("reason")
            == "CrashLoopBackOff"
        ),
        timeout=60,
        message="CrashLoopBackOff",
    )
    previous = read_logs(cluster.agent_dir, namespace, "crash", "main", previous=True)
    assert previous.strip() == "about to fail"
    via_kubectl = cluster.kubectl("logs", "-n", namespace, "crash", "--previous")
    assert via_kubectl.returncode == 0, via_kubectl.stderr
    assert via_kubectl.stdout.strip() == "about to fail"


def test_readiness_follows_the_probe(cluster: LocalCluster, namespace: str) -> None:
    probe = "{httpGet: {path: /healthz, port: %s}, periodSeconds: 1, failureThreshold: 1}"
    apply(
        cluster,
        namespace,
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: good}}
spec:
  containers:
  - name: web
    image: {AGNHOST}
    args: ["netexec", "--http-port=8080"]
    ports: [{{name: http, containerPort: 8080}}]
    readinessProbe: {probe % "http"}
---
apiVersion: v1
kind: Pod
metadata: {{name: bad}}
spec:
  containers:
  - name: web
    image: {AGNHOST}
    args: ["netexec", "--http-port=8080"]
    readinessProbe: {probe % 8081}
""",
    )
    wait_for(
        lambda: condition(get_pod(cluster, namespace, "good"), "Ready") == "True",
        timeout=30,
        message="pod good to be Ready",
    )
    wait_for(
        lambda: container_status(cluster, namespace, "bad").get("started"),
        timeout=30,
        message="pod bad to be started",
    )
    bad = get_pod(cluster, namespace, "bad")
    assert bad["status"]["phase"] == "Running"
    assert condition(bad, "Ready") == "False"
    assert container_status(cluster, namespace, "bad")["ready"] is False


def test_liveness_failure_restarts_the_container(cluster: LocalCluster, namespace: str) -> None:
    apply(
        cluster,
        namespace,
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: sick}}
spec:
  containers:
  - name: web
    image: {AGNHOST}
    args: ["netexec", "--http-port=8080"]
    livenessProbe:
      httpGet: {{path: /healthz, port: 8099}}
      periodSeconds: 1
      failureThreshold: 2
""",
    )
    wait_for(
        lambda: container_status(cluster, namespace, "sick").get("restartCount", 0) >= 1,
        timeout=30,
        message="a liveness restart",
    )


def test_unknown_image_waits_with_image_pull_errors(cluster: LocalCluster, namespace: str) -> None:
    apply(
        cluster,
        namespace,
        """
apiVersion: v1
kind: Pod
metadata: {name: nope}
spec:
  containers: [{name: main, image: "example.com/not/in-table:1"}]
""",
    )

    def waiting() -> dict[str, Any] | None:
        state = container_status(cluster, namespace, "nope").get("state", {})
        reason = state.get("waiting", {}).get("reason")
        return state["waiting"] if reason in ("ErrImagePull", "ImagePullBackOff") else None

    state = wait_for(waiting, timeout=30, message="an image pull error")
    assert "example.com/not/in-table:1" in state["message"]
    assert get_pod(cluster, namespace, "nope")["status"]["phase"] == "Pending"


def test_deleting_a_pod_kills_its_process_group(cluster: LocalCluster, namespace: str) -> None:
    apply(
        cluster,
        namespace,
        """
apiVersion: v1
kind: Pod
metadata: {name: tree}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: main, image: busybox, command: ["sh", "-c", "sleep 300 & sleep 301 & wait"]}
""",
    )
    pod_dir = cluster.agent_dir / "pods" / namespace / "tree"

    def pid() -> int | None:
        state = read_state(pod_dir) or {}
        value = state.get("containers", {}).get("main", {}).get("pid")
        return value if isinstance(value, int) else None

    leader = wait_for(pid, timeout=30, message="the container's pid in state.json")
    members = wait_for(
        lambda: group_members(leader) if len(group_members(leader)) >= 3 else None,
        timeout=10,
        message="the shell and its two sleeps in one process group",
    )
    result = cluster.kubectl("delete", "pod", "-n", namespace, "tree", "--wait=true")
    assert result.returncode == 0, result.stderr
    wait_for(
        lambda: not any(is_alive(p) for p in members),
        timeout=15,
        message="the shell and its children to be gone",
    )
