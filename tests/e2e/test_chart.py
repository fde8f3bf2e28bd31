"""Issue 6, end to end: the Helm chart on the local control plane, under its own RBAC.

Given the chart (built helm), when it is linted, rendered and installed into a namespace
with `watchNamespaces` set to it, then the operator runs as a pod from the chart (the node
agent maps the operator image to the `specdecode-operator` console script and hands it a
token of the chart's ServiceAccount), that ServiceAccount cannot list Secrets (kubectl's
`auth can-i`, and a real request whose 403 lands in the API server's audit log), and a
full rollout of the simulator example reaches a verdict with no request of that account
denied, nothing Forbidden in the operator's log, and `kubectl specdecode` showing it.

The session's process operator (tests/cluster/localcluster/pytest_operator.py) watches
every namespace, so it is stopped while the chart's operator runs and started again after;
the audit log check below fails if any other client still wrote the rollout's status.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.handle import LocalCluster
from localcluster.manifests import load_example
from localcluster.operator_process import OperatorProcess
from localcluster.rollouts import Rollout
from localcluster.waiting import wait_for

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "specdecode-operator"
APP_VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
VERDICTS = ("Promoted", "RolledBack")
ENDED = (*VERDICTS, "Failed", "Degraded")
ALL_MONITORING = (
    "--set=monitoring.serviceMonitor.enabled=true",
    "--set=monitoring.enginePodMonitor.enabled=true",
    "--set=monitoring.prometheusRule.enabled=true",
)


def helm_ok(cluster: LocalCluster, *args: str, timeout: float = 120.0) -> str:
    result = cluster.helm(*args, timeout=timeout)
    assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def rendered(cluster: LocalCluster, *values: str) -> list[dict[str, Any]]:
    out = helm_ok(cluster, "template", "t", str(CHART), "--namespace", "ops", *values)
    return [doc for doc in yaml.safe_load_all(out) if doc]


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in docs if doc["kind"] == kind]


def test_helm_lint_and_template(cluster: LocalCluster, tmp_path: Path) -> None:
    for values in ((), ("--set=watchNamespaces={a,b}",), ALL_MONITORING):
        helm_ok(cluster, "lint", "--strict", str(CHART), *values)
    with_crds = rendered(cluster, "--include-crds")
    crds = of_kind(with_crds, "CustomResourceDefinition")
    assert [crd["metadata"]["name"] for crd in crds] == [
        "specdecoderollouts.specdecode.io",
        "specdecodetunings.specdecode.io",
    ]
    docs = rendered(cluster)
    assert {d["kind"] for d in docs} == {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Service",
        "ConfigMap",
        "Role",  # the leader-election Lease, in the operator's own namespace
        "RoleBinding",
        "PodDisruptionBudget",
    }
    pod = of_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == f"ghcr.io/specdecode-operator/operator:{APP_VERSION}"
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] and not security["allowPrivilegeEscalation"]
    assert security["capabilities"]["drop"] == ["ALL"]
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert {"requests", "limits"} <= set(container["resources"])
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/tmp"}
    dashboard = of_kind(docs, "ConfigMap")[0]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["specdecode-rollouts.json"])["panels"]

    namespaced = rendered(cluster, "--set=watchNamespaces={a,b}")
    # One Role per watched namespace, plus the leader-election Lease Role in the release's own.
    namespaces = sorted(r["metadata"]["namespace"] for r in of_kind(namespaced, "Role"))
    assert namespaces == ["a", "b", "ops"]
    # Only the operator reaches the load pods' control port, in each watched namespace.
    policies = of_kind(namespaced, "NetworkPolicy")
    assert sorted(p["metadata"]["namespace"] for p in policies) == ["a", "b"]
    assert not of_kind(docs, "NetworkPolicy")  # cluster-wide: no namespace to put one in
    for role in of_kind(namespaced, "Role") + of_kind(namespaced, "ClusterRole"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
            if "secrets" in rule["resources"]:  # the prompt set; a rollout's load token
                assert set(rule["verbs"]) <= {"get", "create"}
    env = {
        e["name"]: e.get("value")
        for e in of_kind(namespaced, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0][
            "env"
        ]
    }
    assert env["SPECDECODE_NAMESPACES"] == "a,b"

    monitored = rendered(cluster, *ALL_MONITORING)
    assert of_kind(monitored, "PodMonitor") and of_kind(monitored, "ServiceMonitor")
    rules_file = tmp_path / "rules.yaml"
    rule_spec = of_kind(monitored, "PrometheusRule")[0]["spec"]
    rules_file.write_text(yaml.safe_dump(rule_spec))
    check = subprocess.run(
        ["promtool", "check", "rules", str(rules_file)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr


@dataclass(frozen=True)
class Release:
    """The chart installed into one namespace, its operator pod Ready."""

    namespace: str
    name: str
    service_account: str
    audit_offset: int

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"


def audit_events(cluster: LocalCluster, offset: int) -> list[dict[str, Any]]:
    """API server audit events written after byte `offset`."""
    with cluster.audit_log.open("rb") as log:
        log.seek(offset)
        return [json.loads(line) for line in log.read().splitlines() if line.strip()]


def operator_log(cluster: LocalCluster, release: Release) -> str:
    deployment = f"deployment/{release.name}-specdecode-operator"
    out = cluster.kubectl("logs", "-n", release.namespace, deployment, "--tail=-1")
    return out.stdout + out.stderr


@pytest.fixture
def release(cluster: LocalCluster, namespace: str, operator: OperatorProcess) -> Iterator[Release]:
    """`helm install` of the chart, serving only `namespace`, on the CPU node.

    The `operator` fixture installs the CRD (helm then skips the chart's copy, as it does
    for any CRD already present); its process is stopped so that only the pod serves.
    """
    operator.stop()
    try:
        yield from _installed(cluster, namespace)
    finally:
        operator.start()


def _installed(cluster: LocalCluster, namespace: str) -> Iterator[Release]:
    name = "sdo"
    offset = cluster.audit_log.stat().st_size
    install = cluster.helm(
        "install", name, str(CHART), "--namespace", namespace,
        f"--set=watchNamespaces={{{namespace}}}",
        f"--set=operator.prometheusUrl={cluster.prometheus_url}",
        "--set=operator.reconcileIntervalSeconds=1",
        # Pods share one network namespace here: bind the pod's own 127.0.0.N address.
        "--set=operator.listenAddress=$(POD_IP)",
        "--set=nodeSelector.specdecode\\.dev/pool=cpu",
        "--wait", "--timeout=180s",
        timeout=240,
    )  # fmt: skip
    info = Release(namespace, name, f"{name}-specdecode-operator", offset)
    try:
        assert install.returncode == 0, (
            f"helm install failed: {install.stderr.strip()}\n"
            f"operator log (last lines):\n{operator_log(cluster, info)[-3000:]}"
        )
        yield info
    finally:
        cluster.kubectl("delete", "sdr", "--all", "-n", namespace, "--wait=false")
        cluster.helm("uninstall", name, "--namespace", namespace, "--wait", timeout=120)


def test_operator_pod_from_the_chart_runs_and_cannot_list_secrets(
    cluster: LocalCluster, release: Release
) -> None:
    pods = json.loads(
        cluster.kubectl(
            "get", "pods", "-n", release.namespace, "-l",
            f"app.kubernetes.io/instance={release.name}", "-o", "json", check=True,
        ).stdout
    )["items"]  # fmt: skip
    # Two replicas (the chart's default): one leads on the Lease, the other stands by Ready.
    # The Lease, like the ServiceAccount, is named after the release's full name.
    assert len(pods) == 2 and {p["spec"]["nodeName"] for p in pods} == {"cpu-0"}
    for pod in pods:
        assert pod["spec"]["serviceAccountName"] == release.service_account
        ready = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert ready["Ready"] == "True"

    def lease_holder() -> str:
        return cluster.kubectl(
            "get", "lease", release.service_account, "-n", release.namespace,
            "-o", "jsonpath={.spec.holderIdentity}",
        ).stdout.strip()  # fmt: skip

    holder = wait_for(lease_holder, timeout=60, message="a replica holds the Lease")
    assert holder in {p["metadata"]["name"] for p in pods}

    def can_i(verb: str, resource: str, *extra: str) -> str:
        result = cluster.kubectl(
            "auth", "can-i", verb, resource, *extra, "-n", release.namespace,
            f"--as={release.user}",
        )  # fmt: skip
        return result.stdout.strip()

    assert can_i("get", "secrets") == "yes"
    assert can_i("list", "secrets") == "no"
    assert can_i("watch", "secrets") == "no"
    assert can_i("list", "pods") == "yes"
    assert can_i("delete", "pods") == "yes"  # the shadow-load pods of a stage
    assert can_i("update", "pods") == "no"
    assert can_i("create", "pods", "--subresource=exec") == "no"

    kubeconfig = cluster.kubeconfig_for_service_account(release.namespace, release.service_account)
    denied = cluster.kubectl("get", "secrets", "-n", release.namespace, kubeconfig=kubeconfig)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()

    def denial_audited() -> bool:
        return any(
            e.get("user", {}).get("username") == release.user
            and e.get("verb") == "list"
            and e.get("objectRef", {}).get("resource") == "secrets"
            and e.get("responseStatus", {}).get("code") == 403
            for e in audit_events(cluster, release.audit_offset)
        )

    wait_for(denial_audited, timeout=30, message="the 403 on list secrets in the audit log")


def test_full_rollout_under_the_charts_rbac(cluster: LocalCluster, release: Release) -> None:
    rollout = Rollout(cluster, release.namespace, "llama-8b")
    rollout.apply(load_example())
    status = rollout.wait_phase(ENDED, timeout=420)
    assert status["phase"] in VERDICTS, f"no verdict: {status['phase']}: {status.get('message')}"

    plugin = run_plugin(cluster, "status", "llama-8b", "-n", release.namespace)
    assert plugin.returncode == 0, plugin.stderr
    assert status["phase"] in plugin.stdout and "acceptance" in plugin.stdout
    print(f"\n$ kubectl specdecode status llama-8b -n {release.namespace}\n{plugin.stdout}")
    missing = run_plugin(cluster, "get", "nope", "-n", release.namespace)
    assert missing.returncode == 1 and '"nope" not found' in missing.stderr

    events = audit_events(cluster, release.audit_offset)
    mine = [e for e in events if e.get("user", {}).get("username") == release.user]
    denied = [
        (e["verb"], e.get("objectRef"), e["responseStatus"]["code"])
        for e in mine
        if e.get("responseStatus", {}).get("code") in (401, 403)
    ]
    assert mine and not denied, f"requests of {release.user} denied: {denied}"
    status_writers = {
        e["user"]["username"]
        for e in events
        if e.get("objectRef", {}).get("subresource") == "status"
        and e.get("objectRef", {}).get("resource") == "specdecoderollouts"
        and e.get("objectRef", {}).get("namespace") == release.namespace
        and e.get("verb") == "patch"
    }
    assert status_writers == {release.user}, f"another client wrote the status: {status_writers}"
    log = operator_log(cluster, release)
    assert "Forbidden" not in log and " 403 " not in log, log[-3000:]


def run_plugin(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    """`kubectl specdecode ...`: kubectl finds kubectl-specdecode on PATH (the venv's bin)."""
    env = cluster.env()
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    return subprocess.run(
        [str(cluster.bin_dir / "kubectl"), "specdecode", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
