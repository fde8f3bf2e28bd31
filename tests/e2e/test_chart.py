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

import functools
import json
import math
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import alerts, dashboards
from localcluster.handle import LocalCluster
from localcluster.manifests import load_example, merged
from localcluster.operator_process import OperatorProcess
from localcluster.rollouts import Rollout, run_plugin
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
    # Only the operator reaches the load pods' and the splitter's control port, in each
    # watched namespace (the splitter's mirror port: networkPolicy.splitterMirrorFrom).
    policies = of_kind(namespaced, "NetworkPolicy")
    placed = sorted(
        (p["metadata"]["name"].rsplit("-", 1)[-1], p["metadata"]["namespace"]) for p in policies
    )
    assert placed == [("pods", "a"), ("pods", "b"), ("splitter", "a"), ("splitter", "b")], placed
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
    # Cluster-wide, a namespaced install asks only what kopf needs to find the CRDs and
    # the namespaces it serves: nothing of any workload or Secret outside them.
    (cluster_role,) = of_kind(namespaced, "ClusterRole")
    assert sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"]))
                  for r in cluster_role["rules"]) == [
        (("",), ("namespaces",), ("list", "watch")),
        (("apiextensions.k8s.io",), ("customresourcedefinitions",), ("list", "watch")),
    ]  # fmt: skip

    monitored = rendered(cluster, *ALL_MONITORING)
    assert of_kind(monitored, "PodMonitor") and of_kind(monitored, "ServiceMonitor")
    rules_file = tmp_path / "rules.yaml"
    rule_spec = of_kind(monitored, "PrometheusRule")[0]["spec"]
    rules_file.write_text(yaml.safe_dump(rule_spec))
    check = subprocess.run(
        ["promtool", "check", "rules", str(rules_file)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_namespaced_install_is_accepted_by_the_api_server(
    cluster: LocalCluster, namespace: str
) -> None:
    """Everything `helm install` would create for one watched namespace, through the real
    API server's validation and RBAC escalation checks (a server-side dry run)."""
    out = helm_ok(
        cluster, "template", "sdo", str(CHART), "--namespace", namespace,
        f"--set=watchNamespaces={{{namespace}}}", "--set=admissionPolicy.enabled=true",
    )  # fmt: skip
    kinds = sorted({doc["kind"] for doc in yaml.safe_load_all(out) if doc})
    dry = cluster.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-", input=out)
    assert dry.returncode == 0, dry.stderr
    assert "ClusterRole" in kinds and "NetworkPolicy" in kinds, kinds
    print(f"server-side dry run accepted: {', '.join(kinds)}")


def test_the_admission_policy_refuses_what_the_allow_lists_do_not_name(
    cluster: LocalCluster, namespace: str, operator: OperatorProcess
) -> None:
    """The chart's ValidatingAdmissionPolicy on the real API server: a rollout whose image
    or prompt Secret is outside the allow-lists is refused with the policy's message naming
    the field and value; one inside them is admitted (server-side dry runs)."""
    del operator  # the CRDs
    docs = rendered(
        cluster, "--set=admissionPolicy.enabled=true",
        "--set=admissionPolicy.allowedImages={ghcr.io/specdecode-operator/vllm-sim}",
        "--set=admissionPolicy.allowedSecrets={prompts}",
    )  # fmt: skip
    policy = of_kind(docs, "ValidatingAdmissionPolicy") + of_kind(
        docs, "ValidatingAdmissionPolicyBinding"
    )
    assert len(policy) == 2
    manifest = yaml.safe_dump_all(policy)
    cluster.kubectl("apply", "-f", "-", input=manifest, check=True)
    try:

        def dry_run(patch: dict[str, Any]) -> subprocess.CompletedProcess[str]:
            body = merged(load_example(), {"metadata": {"namespace": namespace}, **patch})
            return cluster.kubectl(
                "apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(body)
            )

        foreign = {"spec": {"engine": {"image": "registry.example.com/vllm:latest"}}}

        def refused_foreign() -> subprocess.CompletedProcess[str] | None:
            result = dry_run(foreign)
            return result if result.returncode != 0 else None

        # the API server picks the policy up within a second or two
        refused = wait_for(refused_foreign, timeout=30, message="a foreign image refused")
        assert (
            'spec.engine.image: image "registry.example.com/vllm:latest" is not in the '
            "chart's admissionPolicy.allowedImages"
        ) in refused.stderr, refused.stderr
        refused = dry_run(prompts_in("other"))
        assert refused.returncode != 0
        assert 'secretRef.name: Secret "other" is not in the chart' in refused.stderr
        admitted = dry_run(prompts_in("prompts"))
        assert admitted.returncode == 0, admitted.stderr
    finally:
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", input=manifest)


def prompts_in(secret: str) -> dict[str, Any]:
    """A patch: the rollout's prompt set read from key `p` of Secret `secret`."""
    traffic = {"builtinWorkload": None, "secretRef": {"name": secret, "key": "p"}}
    return {"spec": {"analysis": {"traffic": traffic}}}


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
        "--set=operator.engineScrapeIntervalSeconds=1",
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


@pytest.fixture
def erroring_source(cluster: LocalCluster, release: Release) -> Iterator[None]:
    """Rollout ERRORS' acceptance query answered malformed by Prometheus, for one test."""
    pod = f"{ERRORS}-candidate-bad-0"  # matches its candidate pods' regex, no one else's
    with alerts.malformed_acceptance_series(cluster, release.namespace, pod):
        yield


# Its llama-8b rollout's client-side TailLatency look (P99 ~31 ms: a 5 % timing budget of
# ~1.6 ms) is CPU-bound timing: beside the other worker's verdict window (test_verdicts'
# six analyses) its load clients lagged past that budget at every look, Inconclusive (CI
# of stops 46 and 47, one rehearsal of session 24). `make test` runs it alone.
@pytest.mark.cpu_exclusive
def test_full_rollout_under_the_charts_rbac(
    cluster: LocalCluster, release: Release, alert_rules: None, erroring_source: None
) -> None:
    """One rollout promoted, one rolled back by a gate, one tuning: the dashboard and the
    alerts are then checked against what Prometheus scraped of them (issue 26). Two small
    rollouts drive the alerts nothing else does: one whose acceptance query keeps failing
    (GateErrors), one whose shadow load cannot be timed honestly (LoadSaturated); the one
    to promote starts once the latter is gone, its tail-latency stage timed on a machine
    that one no longer saturates."""
    started = time.time()
    strict = Rollout(cluster, release.namespace, "llama-8b-strict")
    # Another seed: with llama-8b's own, both replay the same requests on the same simulated
    # engines, and their alpha per traffic group can coincide and hide each other in the
    # dashboard's picture (seen once: 0.2824 both, "1 of 2 series visible").
    strict.apply(
        merged(
            load_example(),
            {"spec": {"analysis": {"stages": STRICT_STAGES, "traffic": {"seed": 1}}}},
        )
    )
    broken = Rollout(cluster, release.namespace, "llama-8b-no-prompts")
    broken.apply(merged(load_example(), {"spec": {"analysis": {"traffic": MISSING_PROMPTS}}}))
    erroring = Rollout(cluster, release.namespace, ERRORS)
    erroring.apply(merged(load_example(), {"spec": {"analysis": ERRORS_ANALYSIS}}))
    saturated = Rollout(cluster, release.namespace, SATURATED)
    saturated.apply(merged(load_example(), SATURATED_PATCH))
    apply_tuning(cluster, release.namespace)
    # The two alerts only these rollouts drive, read while their cause lasts (GateErrors
    # for ~10 s before the error limit rolls back, LoadSaturated until it is deleted below).
    for alert, name in (("SpecDecodeGateErrors", ERRORS), ("SpecDecodeLoadSaturated", SATURATED)):
        found = wait_for(
            functools.partial(
                alerts.firing_alert, cluster, alert, namespace=release.namespace, rollout=name
            ),
            # Each fires ~1 min after the apply; a wait that fails must end inside the
            # test's 300 s pytest-timeout (with setup), or it would be reported as that.
            timeout=150,
            message=f"{alert} firing for {name}",
        )
        names_the_rollout(found, release.namespace, name)
        print(f"{alert} fired (+{time.time() - started:.0f} s): {found['annotations']['summary']}")

    def saturated_reason(status: dict[str, Any]) -> str | None:
        gates = [g for stage in status.get("stages", []) for g in stage.get("gates", [])]
        reasons = (g.get("reason", "") for g in gates)
        return next((r for r in reasons if r.startswith("shadow load saturated")), None)

    reason = saturated.wait(
        saturated_reason,
        timeout=30,
        message=f"{SATURATED}: its TailLatency look refused as saturated in status",
    )
    print(f"{SATURATED}: {reason}")
    # Its job done, it goes, and only then does llama-8b start: its load clients time
    # sub-millisecond steps, the busiest on the machine. Left to its stage's end they
    # delayed llama-8b's own clients over 5 % of its P99 (1.6-1.8 ms of ~31 ms) at every
    # look of its tail-latency stage (CI of stop 46); deleted after its alert but beside
    # llama-8b's first ~15 s of that stage, they still did (2.39 ms of 33.5 ms, a rehearsal
    # of session 25, alone on the machine): the client delay's P99 is the stage's, so ~10 %
    # of its window lagging decides it.
    cluster.kubectl("delete", "sdr", SATURATED, "-n", release.namespace, "--wait=false")
    wait_for(
        lambda: not saturated.pods(terminating=True),
        timeout=60,
        message=f"{SATURATED}'s pods gone",
    )
    rollout = Rollout(cluster, release.namespace, "llama-8b")
    rollout.apply(merged(load_example(), {"spec": {"analysis": {"pauseBeforePromotion": True}}}))
    status = rollout.wait_phase((*ENDED, "Paused"), timeout=420)
    if status["phase"] == "Paused":  # gates passed: on call is told, a person promotes
        wait_for(
            functools.partial(
                alerts.firing,
                cluster,
                "SpecDecodeRolloutAwaitingPromotion",
                namespace=release.namespace,
            ),
            timeout=30,
            message="SpecDecodeRolloutAwaitingPromotion fired",
        )
        promote = run_plugin(cluster, "promote", "llama-8b", "-n", release.namespace)
        assert promote.returncode == 0, promote.stderr
        status = rollout.wait_phase(ENDED, timeout=120)
    assert status["phase"] in VERDICTS, f"no verdict: {status['phase']}: {status.get('message')}"
    unusable = broken.wait_phase(ENDED, timeout=60)
    assert unusable["phase"] == "Failed" and "prompt set unusable" in unusable["message"], unusable
    failed = strict.wait_phase(ENDED, timeout=120)
    assert failed["phase"] == "RolledBack" and failed["reason"] == "GateFailed", failed
    # No data ever reached its gate: each look an Error, then rolled back on the limit.
    errored = erroring.wait_phase(ENDED, timeout=120)
    assert errored["phase"] == "RolledBack" and errored["reason"] == "MetricsUnavailable", errored
    _, alpha = last_gate(errored, "alpha")
    assert alpha["verdict"] == "Error" and "metric source prometheus" in alpha["reason"], alpha
    wait_for(
        lambda: tuning_phase(cluster, release.namespace) == "Succeeded",
        timeout=300,
        message=f"tuning {TUNING} Succeeded",
    )

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

    statuses = {"llama-8b": rollout.status(), "llama-8b-strict": strict.status()}
    panels = dashboard_answers(cluster, release.namespace, statuses, started - 5)
    dashboard_agrees_with_status(panels, statuses)
    alerts_fired(cluster, release.namespace, started - 5, status["phase"] == "Promoted")


# Stage 0 asks for an alpha no EAGLE-3 head reaches (the simulator's ~0.6-0.7): the gate
# fails at the first look whose upper bound is under 0.9, and the rollout rolls back.
STRICT_STAGES = [
    {
        "name": "acceptance",
        "concurrency": 4,
        "warmupSeconds": 5,
        "minDurationSeconds": 20,
        "maxDurationSeconds": 180,
        "gates": [{"name": "alpha", "type": "Acceptance", "minAlpha": 0.9}],
    }
]
# GateErrors: its candidate's acceptance query answers a malformed row on every look
# (`alerts.malformed_acceptance_series`); 8 Errors in a row (16 s) are tolerated, then it
# rolls back (MetricsUnavailable). One stream: it costs the machine next to nothing. The
# stage's end is far off (300 s): the error limit is under test, and on a machine ~5x slower
# than usual (a rehearsal of session 24: GateErrors fired at +135 s, not +25) a 120 s stage
# ended Inconclusive before the eighth Error look in a row.
ERRORS = "llama-8b-errors"
ERRORS_ANALYSIS = {
    "intervalSeconds": 2,
    "consecutiveErrorLimit": 8,
    "stages": [
        {
            "name": "acceptance",
            "concurrency": 1,
            "warmupSeconds": 2,
            "minDurationSeconds": 20,
            "maxDurationSeconds": 300,
            "gates": [{"name": "alpha", "type": "Acceptance"}],
        }
    ],
}
# LoadSaturated: engines simulated 50x faster than an L40S (SPECDECODE_SIM_TIME_SCALE 0.02:
# sub-millisecond steps, P99 chunk gap ~1-2 ms), so 5 % of the judged P99 is under 0.1 ms,
# far under the load client's own timestamp delay on this 2-core machine (P99 0.6-1.5 ms
# measured at 1-2 streams; at 0.1 one run's margin was only 1.65x, too thin for a quiet
# machine), and sub-millisecond steps put many chunk gaps under the 1 ms burst floor too.
# Its TailLatency gate can look after 30 one-second blocks; every look is then refused as
# "shadow load saturated" (by the client's delay or as a bursting stream, both spelled so)
# until maxDurationSeconds ends the stage Inconclusive.
SATURATED = "llama-8b-saturated"
SATURATED_PATCH = {
    "spec": {
        "engine": {
            "env": [
                {"name": "SPECDECODE_SIM_GPU", "value": "L40S"},
                {"name": "SPECDECODE_SIM_TIME_SCALE", "value": "0.02"},
            ]
        },
        "analysis": {
            "intervalSeconds": 2,
            "traffic": {"loadGenerator": {"blockSeconds": 1}},
            "stages": [
                {
                    "name": "tail-latency",
                    "concurrency": 1,
                    "warmupSeconds": 2,
                    "minDurationSeconds": 20,
                    "maxDurationSeconds": 120,
                    "gates": [{"name": "p99-itl", "type": "TailLatency"}],
                }
            ],
        },
    }
}
# A prompt set that does not exist: the rollout fails (TrafficSourceInvalid), production kept.
MISSING_PROMPTS = {"builtinWorkload": None, "configMapRef": {"name": "no-such-prompts", "key": "p"}}
TUNING = "llama-8b-code"
TUNING_EXAMPLE = REPO / "examples" / "simulator" / "specdecode-tuning.yaml"
ARTIFACTS = REPO / "artifacts" / "dashboard"
VARIABLES = ("namespace", "rollout", "tuning")
# Panel types Grafana draws one row per series (state timelines, stats, tables, the
# tuning trend): drawn banded so that equal values do not hide each other.
BANDED = {"stat", "state-timeline", "table", "trend"}


def apply_tuning(cluster: LocalCluster, namespace: str) -> None:
    """The simulator tuning example cut to one config at one concurrency (one trial)."""
    manifest = yaml.safe_load(TUNING_EXAMPLE.read_text())
    manifest["metadata"]["namespace"] = namespace
    manifest["spec"]["searchSpace"]["candidates"] = [
        {"method": "suffix", "num_speculative_tokens": 8}
    ]
    manifest["spec"]["concurrencyLadder"] = [8]
    manifest["spec"]["budget"]["maxParallelTrials"] = 1
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest), check=True)


def tuning_phase(cluster: LocalCluster, namespace: str) -> str:
    out = cluster.kubectl(
        "get", "sdt", TUNING, "-n", namespace, "-o", "jsonpath={.status.phase}"
    )  # fmt: skip
    return out.stdout.strip()


@pytest.fixture
def alert_rules(cluster: LocalCluster) -> Iterator[None]:
    """The chart's PrometheusRule groups evaluated by the local Prometheus for one test,
    with `stuckFor` cut to 15 s so that an analysis' phases run long enough to fire it,
    and `pausedFor`, `degradedFor`, `gateErrorsFor` and `loadSaturatedFor` to seconds."""
    with alerts.chart_rules(
        cluster, "chart",
        "--set=monitoring.prometheusRule.stuckFor=15s",
        "--set=monitoring.prometheusRule.pausedFor=2s",
        "--set=monitoring.prometheusRule.degradedFor=5s",
        "--set=monitoring.prometheusRule.gateErrorsFor=5s",
        "--set=monitoring.prometheusRule.loadSaturatedFor=2s",
    ):  # fmt: skip
        yield


def dashboard_answers(
    cluster: LocalCluster, namespace: str, statuses: dict[str, Any], start: float
) -> dict[str, list[dashboards.Series]]:
    """Every panel query run over the rollouts' lifetime and drawn; series by panel title.
    Fails on a query with no series, a series without a label its panel shows, or a
    picture that shows fewer series than the query returned."""
    api = dashboards.PrometheusApi(cluster.prometheus_url)
    for name, status in statuses.items():  # the verdict's own scrape is in
        query = (
            f'specdecode_rollout_phase{{namespace="{namespace}",rollout="{name}",'
            f'phase="{status["phase"]}"}} == 1'
        )
        wait_for(
            functools.partial(cluster.prometheus_query, query),
            timeout=30,
            message=f"{query} scraped",
        )
    # The grid ends at `end`, so its last point sees every verdict scraped above (a grid
    # from `start` ended up to a step earlier, before a verdict scraped in the last 2 s).
    end, step = time.time(), 2.0
    start = end - math.ceil((end - start) / step) * step
    dashboard = json.loads((CHART / "dashboards" / "specdecode-rollouts.json").read_text())
    wanted = {"namespace": [namespace], "rollout": list(statuses), "tuning": [TUNING]}
    # As Grafana formats a multi-value selection for a Prometheus regex.
    selected = {"namespace": namespace, "rollout": f"({'|'.join(statuses)})", "tuning": TUNING}
    for variable, query in dashboards.variable_queries(dashboard).items():
        offered = api.label_values(dashboards.substitute(query, selected, step), start, end)
        assert set(wanted[variable]) <= set(offered), f"${variable}: {offered}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    by_panel: dict[str, list[tuple[str, dashboards.Series]]] = {}
    types: dict[str, str] = {}
    counts: list[str] = []
    for target in dashboards.targets(dashboard):
        expr = dashboards.substitute(target.expr, selected, step)
        series = [s for s in api.query_range(expr, start, end, step) if s.points]
        counts.append(f"{len(series):4d}  {target.panel}: {target.expr[:80]}")
        assert series, f"panel {target.panel!r}: no data for {expr}"
        for one in series:
            missing = target.required_labels() - set(one.labels)
            assert not missing, f"panel {target.panel!r}: series {one.labels} lacks {missing}"
            by_panel.setdefault(target.panel, []).append((dashboards.legend_text(target, one), one))
        types[target.panel] = target.panel_type
    print("\nseries per dashboard query:\n" + "\n".join(counts))
    for title, drawn in by_panel.items():
        path = ARTIFACTS / (re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") + ".png")
        seen = dashboards.draw(title, drawn, path, start, banded=types[title] in BANDED)
        assert path.stat().st_size > 5_000, f"{path}: nearly empty"
        assert seen == len(drawn), f"{path}: {seen} of {len(drawn)} series visible"
    print(f"{len(by_panel)} panels drawn to {ARTIFACTS}")
    return {title: [one for _, one in drawn] for title, drawn in by_panel.items()}


def last_of(series: list[dashboards.Series], **labels: str) -> float:
    """The last value of the one series whose labels include `labels`."""
    found = [s for s in series if labels.items() <= s.labels.items()]
    assert len(found) == 1, f"{labels}: {[s.labels for s in series]}"
    return found[0].last


def gate_of(status: dict[str, Any], gate_type: str) -> tuple[str, dict[str, Any]]:
    """The stage name and result of the last stage's gate of `gate_type` that ran."""
    for stage in reversed(status["stages"]):
        for gate in stage.get("gates", []):
            if gate["type"] == gate_type and gate.get("value") is not None:
                return stage["name"], gate
    raise AssertionError(f"no {gate_type} result in {status['stages']}")


def last_gate(status: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    """The stage name and result of the last stage's gate called `name` (any verdict)."""
    for stage in reversed(status["stages"]):
        for gate in stage.get("gates", []):
            if gate["name"] == name:
                return stage["name"], gate
    raise AssertionError(f"no gate {name} in {status['stages']}")


def dashboard_agrees_with_status(
    panels: dict[str, list[dashboards.Series]], statuses: dict[str, Any]
) -> None:
    """The panels' last values are the rollouts' final status, to float precision."""
    for name, status in statuses.items():
        assert last_of(panels["Phase"], rollout=name, phase=status["phase"]) == 1.0
    strict = dict(rollout="llama-8b-strict")
    stage, alpha = gate_of(statuses["llama-8b-strict"], "Acceptance")
    assert alpha["verdict"] == "Failed", alpha
    failed = dict(strict, stage=stage, gate=alpha["name"], verdict="Failed")
    assert last_of(panels["Gate verdicts by stage"], **failed) == 1.0
    for bound, field in (("value", "value"), ("lower", "lowerBound"), ("upper", "upperBound")):
        shown = last_of(
            panels["Acceptance rate (alpha) with confidence bounds"], **strict, bound=bound
        )
        assert math.isclose(shown, alpha[field], rel_tol=1e-9), (bound, shown, alpha[field])
    rollbacks = panels["Rollbacks and analysis duration"]
    assert last_of(rollbacks, **strict, reason="GateFailed") == 1.0
    promoted = statuses["llama-8b"]
    if promoted["phase"] == "Promoted":
        stage, tail = gate_of(promoted, "TailLatency")
        for role, field in (("baseline", "baselineValue"), ("candidate", "candidateValue")):
            shown = last_of(
                panels["Client P99 ITL: baseline vs candidate"],
                rollout="llama-8b", stage=stage, role=role,
            )  # fmt: skip
            assert math.isclose(shown, tail[field], rel_tol=1e-9), (role, shown, tail[field])


def alerts_fired(cluster: LocalCluster, namespace: str, start: float, promoted: bool) -> None:
    """The chart's alerts fired for what happened, named the rollout, and no other fired
    for it: ALERTS, the series Prometheus keeps of its alerts' states, over the test."""
    api = dashboards.PrometheusApi(cluster.prometheus_url)
    wanted = {
        ("SpecDecodeGateFailed", "llama-8b-strict"),
        ("SpecDecodeRolledBack", "llama-8b-strict"),
        ("SpecDecodeRolloutStuck", "llama-8b"),  # Analyzing for longer than 15 s
        ("SpecDecodeProductionDegraded", "llama-8b-no-prompts"),  # Failed
        ("SpecDecodeGateErrors", ERRORS),
        ("SpecDecodeLoadSaturated", SATURATED),
    }
    if promoted:
        wanted.add(("SpecDecodeRolloutAwaitingPromotion", "llama-8b"))

    def fired() -> set[tuple[str, str]]:
        series = api.query_range(
            f'ALERTS{{alertstate="firing",namespace="{namespace}"}}', start, time.time(), 1.0
        )
        names = {(s.labels["alertname"], s.labels.get("rollout", "")) for s in series}
        assert wanted <= names, f"not fired: {sorted(wanted - names)}"  # quoted on timeout
        return names

    names = wait_for(fired, timeout=60, message=f"alerts {sorted(wanted)} fired")
    print(f"alerts fired: {sorted(names)}")

    def rollouts(alert: str) -> set[str]:
        return {r for n, r in names if n == alert}

    if promoted:
        assert ("SpecDecodeGateFailed", "llama-8b") not in names
        assert ("SpecDecodeRolledBack", "llama-8b") not in names
    assert rollouts("SpecDecodeGateErrors") == {ERRORS}  # every other gate was measured
    assert rollouts("SpecDecodeProductionDegraded") == {"llama-8b-no-prompts"}
    # llama-8b's own tail-latency stage (16 streams at an L40S's real steps) may also see a
    # saturated look on a loaded machine, and then the alert is right; no other has a
    # TailLatency gate.
    assert rollouts("SpecDecodeLoadSaturated") - {"llama-8b"} == {SATURATED}
    failed = alerts.firing_alert(
        cluster, "SpecDecodeGateFailed", namespace=namespace, rollout="llama-8b-strict"
    )
    assert failed is not None
    names_the_rollout(failed, namespace, "llama-8b-strict")


def names_the_rollout(alert: dict[str, Any], namespace: str, rollout: str) -> None:
    """The alert's labels and summary name the rollout; its runbook is the On call page's line."""
    annotations = alert["annotations"]
    assert alert["labels"]["rollout"] == rollout, alert["labels"]
    assert f"{namespace}/{rollout}" in annotations["summary"], annotations
    assert annotations["runbook_url"].endswith("docs/on-call.md#on-call"), annotations
