"""Issue 13, end to end: a controller an SRE would let into a shared cluster.

- Chaos: ten rollouts analysed and decided while the operator is SIGKILLed at random
  points; every transition is announced by exactly one Event, and nothing is orphaned
  (no shadow Deployment, Service or pod of a decided rollout, no mirror left on a route,
  nothing at all once the rollouts are deleted).
- An invalid spec (one the API server stores but the operator cannot parse) removes the
  shadows, which hold GPUs, and leaves production running.
- Ownership: a user's unlabelled Service and Deployment named like a new rollout's
  production are left byte for byte as they were, the rollout is Degraded naming them,
  and once the user deletes them the rollout proceeds.
- The load path: a load pod answers its control endpoints only with its rollout's token
  (from a Secret the rollout owns); the operator's own calls carry it.
- A hung API server: the leader's connection goes through a proxy that stops forwarding;
  it fences itself (stops every reconcile, sends nothing more) before the standby may
  take the Lease, and the standby finishes the analysis with one Event per transition.
- Leader hand-over: two replicas with leader election; the leader is stopped as an
  upgrade or a drain would stop it, the standby takes the Lease and carries the analysis
  on; one Event per transition throughout.

The chaos test runs its engines on extra fake GPU nodes with the stand-in engine (ten
analyses need 30 GPUs; the default pool has 28) and Mirror traffic (no shadow load, so
nothing depends on the engines' answers); the manual gate makes the verdicts the test's.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import random
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as kube

from localcluster.extra_nodes import STANDIN_IMAGE, ExtraGpuNodes
from localcluster.handle import LocalCluster
from localcluster.hung_proxy import HungProxy
from localcluster.manifests import load_example, merged
from localcluster.operator_process import CRD_NAME, OperatorProcess, install_crds
from localcluster.ports import pick_free_ports
from localcluster.process import start_component, stop_processes, wait_until_ready
from localcluster.rollouts import Rollout
from localcluster.waiting import wait_for
from specdecode.adapters.kube.client import KubeClients, with_server_timeout
from specdecode.settings import OperatorSettings

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
MANUAL = {"spec": {"analysis": {"manual": True, "progressDeadlineSeconds": 300}}}
ROLLOUTS = 10
SEED = 13


def duplicated_events(r: Rollout) -> list[tuple[str, str]]:
    """(reason, message) pairs announced more than once: a transition posted twice."""
    pairs = Counter((e.get("reason", ""), e.get("message", "")) for e in r.events())
    return [pair for pair, count in pairs.items() if count > 1]


def labelled(cluster: LocalCluster, namespace: str, kind: str, selector: str) -> list[str]:
    out = cluster.kubectl(
        "get", kind, "-n", namespace, "-l", selector, "-o", "name", check=True
    ).stdout  # fmt: skip
    return out.split()


# --- chaos -------------------------------------------------------------------------------


def mirror_rollout(
    name: str, namespace: str, nodes: ExtraGpuNodes
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Mirror example (route and rollout) on the extra nodes with the stand-in engine."""
    route, rollout = (
        d for d in yaml.safe_load_all((REPO / "examples" / "mirror.yaml").read_text()) if d
    )
    route = merged(route, {"metadata": {"name": f"{name}-route", "namespace": namespace}})
    route["spec"]["rules"][0]["backendRefs"][0]["name"] = name
    # ServerSide pairing (two filters, no splitter pod): this test is about the operator's
    # kills and Events, not the splitter; its gates are the ones that pairing judges.
    stages = [
        {**stage, "gates": [_server_side(g) for g in stage["gates"] if g["type"] != "Speedup"]}
        for stage in rollout["spec"]["analysis"]["stages"]
    ]
    traffic = {"httpRoute": f"{name}-route", "mirrorPairing": "ServerSide"}
    patch = {
        "spec": {
            "gpuPool": {"gpuProduct": None, "nodeSelector": nodes.selector},
            "engine": {"image": STANDIN_IMAGE},
            "serving": {"replicas": 1},
            "analysis": {"traffic": traffic, "stages": stages},
        }
    }
    return route, merged(merged(rollout, MANUAL), patch)


def _server_side(gate: dict[str, Any]) -> dict[str, Any]:
    """A gate as ServerSide Mirror judges it (TailLatency from vLLM's step histogram)."""
    return {**gate, "itlDefinition": "ServerStep"} if gate["type"] == "TailLatency" else gate


class RandomKiller:
    """SIGKILLs the operator at random moments and starts it again, until stopped."""

    def __init__(self, operator: OperatorProcess, seed: int) -> None:
        self.operator, self.rng = operator, random.Random(seed)
        self.kills = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.rng.uniform(0.5, 6.0)):
            self.operator.kill()
            self.kills += 1
            self.operator.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=120)


@pytest.fixture
def extra_nodes(cluster: LocalCluster) -> Iterator[ExtraGpuNodes]:
    with ExtraGpuNodes(cluster, gpus=3 * ROLLOUTS, pool="chaos") as nodes:
        yield nodes


def test_operator_killed_at_random_points_posts_one_event_per_transition_and_orphans_nothing(
    rollout: Callable[[str], Rollout],
    cluster: LocalCluster,
    namespace: str,
    running_operator: OperatorProcess,
    extra_nodes: ExtraGpuNodes,
) -> None:
    rollouts = [rollout(f"r{i}") for i in range(ROLLOUTS)]
    for r in rollouts:
        route, manifest = mirror_rollout(r.name, namespace, extra_nodes)
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(route), check=True)
        r.apply(manifest)
    killer = RandomKiller(running_operator, SEED)
    try:
        for r in rollouts:
            r.wait_phase("Analyzing", timeout=600)
        # Mirror analyses wait in Analyzing for the action: let the killer strike at least
        # three times by now (a fast start once left it 2 kills for the whole test).
        wait_for(lambda: killer.kills >= 3, timeout=120, message="three kills of the operator")
        for index, r in enumerate(rollouts):
            r.annotate("promote" if index % 2 == 0 else "abort")
        for index, r in enumerate(rollouts):
            r.wait_phase("Promoted" if index % 2 == 0 else "RolledBack", timeout=600)
    finally:
        killer.stop()
    running_operator.assert_running()
    assert killer.kills >= 3, "the operator was not killed often enough to test anything"

    # Events are posted before the guarded status write and named by the status they start
    # from: a kill between the two is repeated under the same names (refused as a
    # duplicate), a refused write withdraws its own. Exactly once: none lost (as status
    # first lost 1 of 10 in one run), none doubled. AnalysisStarted does not depend on
    # measurements, so its repeat after a kill is always the same transition.
    print(f"kills: {killer.kills}")
    for index, r in enumerate(rollouts):
        assert duplicated_events(r) == [], r.describe()
        reasons = r.event_reasons()
        verdict = "Promoted" if index % 2 == 0 else "Aborted"
        assert reasons.count("AnalysisStarted") == 1, r.describe()
        assert reasons.count(verdict) == 1, r.describe()
    for r in rollouts:  # decided: shadows go, routes are given back
        wait_for(functools.partial(_only_production, r), timeout=120)
        for role in ("baseline", "candidate"):
            wait_for(functools.partial(_no_pods, r, role), timeout=120)
        route = json.loads(
            cluster.kubectl(
                "get", "httproute", f"{r.name}-route", "-n", namespace, "-o", "json", check=True
            ).stdout
        )
        filters = [f for rule in route["spec"]["rules"] for f in rule.get("filters") or []]
        assert filters == [], f"mirrors left on {r.name}-route"
    for r in rollouts:
        cluster.kubectl("delete", "sdr", r.name, "-n", namespace, "--wait=false", check=True)
    for kind in ("deployments", "services", "pods"):
        wait_for(
            functools.partial(_none_labelled, cluster, namespace, kind),
            timeout=180,
            message=f"no {kind} left once the rollouts are deleted",
        )


# --- invalid spec ------------------------------------------------------------------------


@pytest.fixture
def permissive_crd(cluster: LocalCluster) -> Iterator[None]:
    """The CRD with an unchecked spec, so a spec only the operator can refuse is stored;
    the generated CRD is applied again afterwards."""
    relax = [
        {
            "op": "replace",
            "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec",
            "value": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        }
    ]
    cluster.kubectl("patch", "crd", CRD_NAME, "--type=json", "-p", json.dumps(relax), check=True)
    try:
        yield
    finally:
        install_crds(cluster)


def test_an_invalid_spec_removes_the_shadows_and_keeps_production(
    rollout: Callable[[str], Rollout], cluster: LocalCluster, permissive_crd: None
) -> None:
    r = rollout("llama")
    r.apply(merged(load_example(), MANUAL))
    r.wait_phase("Analyzing", timeout=240)
    production_uid = r.deployments()["production"]["metadata"]["uid"]

    unparseable = json.dumps({"spec": {"model": {"name": None}}})
    cluster.kubectl(
        "patch", "sdr", r.name, "-n", r.namespace, "--type=merge", "-p", unparseable, check=True
    )  # fmt: skip
    status = r.wait_phase("Failed", timeout=60)
    assert status["reason"] == "InvalidSpec" and "spec.model.name" in status["message"]
    wait_for(lambda: set(r.deployments()) == {"production"}, timeout=60, message="shadows gone")
    for role in ("baseline", "candidate"):
        wait_for(functools.partial(_no_pods, r, role), timeout=60, message=f"{role} pods gone")
    assert r.deployments()["production"]["metadata"]["uid"] == production_uid
    assert duplicated_events(r) == []
    cluster.kubectl("delete", "sdr", r.name, "-n", r.namespace, "--wait=false")


# --- ownership ---------------------------------------------------------------------------

USERS_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "llama", "labels": {"app": "users-own"}},
    "spec": {"selector": {"app": "users-own"}, "ports": [{"port": 80, "targetPort": 8080}]},
}
USERS_DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "llama", "labels": {"app": "users-own"}},
    "spec": {
        "replicas": 0,
        "selector": {"matchLabels": {"app": "users-own"}},
        "template": {
            "metadata": {"labels": {"app": "users-own"}},
            "spec": {"containers": [{"name": "web", "image": STANDIN_IMAGE}]},
        },
    },
}


def _as_stored(cluster: LocalCluster, namespace: str, kind: str) -> dict[str, Any]:
    out = cluster.kubectl("get", kind, "llama", "-n", namespace, "-o", "json", check=True)
    stored: dict[str, Any] = json.loads(out.stdout)
    stored.pop("status", None)  # the Deployment controller's, not a write to the object
    return stored


def _not_owned_message(status: dict[str, Any]) -> str | None:
    conditions = status.get("conditions") or []
    degraded: dict[str, Any] = next((c for c in conditions if c.get("type") == "Degraded"), {})
    if degraded.get("status") == "True" and degraded.get("reason") == "ChildNotOwned":
        return str(degraded.get("message"))
    return None


def test_objects_named_like_a_new_rollouts_children_are_left_alone(
    rollout: Callable[[str], Rollout], cluster: LocalCluster, namespace: str
) -> None:
    for manifest in (USERS_SERVICE, USERS_DEPLOYMENT):
        cluster.kubectl(
            "apply", "-n", namespace, "-f", "-", input=json.dumps(manifest), check=True
        )  # fmt: skip

    def settled() -> bool:  # the Deployment controller has written its status
        stored = json.loads(
            cluster.kubectl("get", "deployment", "llama", "-n", namespace, "-o", "json").stdout
        )
        return bool((stored.get("status") or {}).get("observedGeneration"))

    wait_for(settled, timeout=30, message="the user's Deployment observed")
    before = {kind: _as_stored(cluster, namespace, kind) for kind in ("service", "deployment")}

    r = rollout("llama")
    r.apply(merged(load_example(), MANUAL))
    message = r.wait(_not_owned_message, timeout=60, message="Degraded: not owned")
    assert f"Service {namespace}/llama already exists" in message, message
    assert f"Deployment {namespace}/llama already exists" in message, message
    assert "rename the rollout" in message
    after = {kind: _as_stored(cluster, namespace, kind) for kind in ("service", "deployment")}
    assert after == before  # spec and metadata, managedFields and resourceVersion included

    for kind in ("service", "deployment"):
        cluster.kubectl("delete", kind, "llama", "-n", namespace, check=True)
    r.wait_phase("Analyzing", timeout=240)
    assert _not_owned_message(r.status()) is None
    service = _as_stored(cluster, namespace, "service")
    assert [ref["uid"] for ref in service["metadata"]["ownerReferences"]] == [
        r.get()["metadata"]["uid"]
    ]
    cluster.kubectl("delete", "sdr", r.name, "-n", r.namespace, "--wait=false")


# --- the load path -----------------------------------------------------------------------


def _load_requests(status: dict[str, Any]) -> int:
    return sum(((stage.get("load") or {}).get("requests") or 0) for stage in status["stages"])


def _status_code(url: str, method: str = "GET", token: str | None = None) -> int:
    body = b'{"urls": ["http://10.0.0.1:8000"]}' if method == "POST" else None
    request = urllib.request.Request(url, data=body, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_a_load_pod_answers_its_rollouts_operator_only(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    r.apply(merged(load_example(), MANUAL))
    r.wait_phase("Analyzing", timeout=240)
    # The operator's own calls carry the token: its looks count the load pods' requests.
    r.wait(lambda status: _load_requests(status) > 0, timeout=120, message="load measured")
    pod = r.pods("shadow-load")[0]
    base = f"http://{pod['status']['podIP']}:8090"
    assert _status_code(f"{base}/v1/report?since=0") == 401
    assert _status_code(f"{base}/v1/endpoints", "POST") == 401
    assert _status_code(f"{base}/v1/endpoints", "POST", token="a-guess") == 401
    assert _status_code(f"{base}/healthz") == 200  # the kubelet's probe needs no token
    secret = json.loads(
        cluster.kubectl(
            "get", "secret", "llama-load-token", "-n", r.namespace, "-o", "json", check=True
        ).stdout
    )  # fmt: skip
    owner = secret["metadata"]["ownerReferences"][0]
    assert owner["uid"] == r.get()["metadata"]["uid"]  # deleted with the rollout
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert _status_code(f"{base}/v1/report?since=0", token=token) == 200
    cluster.kubectl("delete", "sdr", r.name, "-n", r.namespace, "--wait=false")


# --- leader hand-over --------------------------------------------------------------------


class Replica:
    """One operator replica with leader election, as the chart runs it."""

    def __init__(
        self, cluster: LocalCluster, namespace: str, name: str, kubeconfig: Path | None = None
    ) -> None:
        self.cluster, self.name = cluster, name
        self.component = f"operator-{name}"
        ports = pick_free_ports([f"{name}-metrics", f"{name}-health"])
        self.health = f"http://127.0.0.1:{ports[f'{name}-health']}/healthz"
        self.metrics = f"http://127.0.0.1:{ports[f'{name}-metrics']}/metrics"
        program = shutil.which("specdecode-operator", path=str(Path(sys.executable).parent))
        argv = [program or "specdecode-operator", "--leader-elect"]
        argv += ["--kubeconfig", str(kubeconfig or cluster.kubeconfig)]
        argv += ["--prometheus-url", cluster.prometheus_url, "--reconcile-interval", "1"]
        argv += ["--metrics-port", str(ports[f"{name}-metrics"])]
        env = {
            "POD_NAME": name,
            "POD_NAMESPACE": namespace,
            "SPECDECODE_METRICS_HOST": "127.0.0.1",
            "SPECDECODE_LIVENESS_ENDPOINT": self.health,
        }
        self.child: subprocess.Popen[bytes] = start_component(
            cluster.paths, self.component, argv, extra_env=env
        )
        log = cluster.paths.log_file(self.component)
        wait_until_ready(self.component, self.child, self._alive, 60.0, log)

    def _alive(self) -> bool:
        with urllib.request.urlopen(self.health, timeout=2):
            return True

    def metric(self, name: str) -> float:
        """The sum of a metric's samples on this replica's /metrics (served locally)."""
        with urllib.request.urlopen(self.metrics, timeout=2) as reply:
            text = reply.read().decode()
        lines = [line for line in text.splitlines() if line.startswith(name)]
        return sum(float(line.rsplit(" ", 1)[1]) for line in lines)

    def stop(self) -> None:
        """SIGTERM, as the kubelet does on an upgrade or a drain."""
        if self.child.poll() is None:
            stop_processes([self.child.pid], grace=30.0)


def lease_holder(cluster: LocalCluster, namespace: str) -> str | None:
    out = cluster.kubectl(
        "get", "lease", "specdecode-operator", "-n", namespace,
        "-o", "jsonpath={.spec.holderIdentity}",
    )  # fmt: skip
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def test_leader_hand_over_keeps_the_analysis_going(
    rollout: Callable[[str], Rollout],
    cluster: LocalCluster,
    namespace: str,
    running_operator: OperatorProcess,
) -> None:
    running_operator.stop()  # two replicas of our own instead; the session's comes back after
    replicas = {name: Replica(cluster, namespace, name) for name in ("replica-a", "replica-b")}
    try:
        leader = wait_for(lambda: lease_holder(cluster, namespace), timeout=30, message="leader")
        r = rollout("llama")
        r.apply(merged(load_example(), MANUAL))
        before = r.wait_phase("Analyzing", timeout=240)

        stopped_at = time.monotonic()
        replicas[leader].stop()

        def new_holder() -> str | None:
            holder = lease_holder(cluster, namespace)
            return holder if holder not in (None, leader) else None

        successor = wait_for(new_holder, timeout=30, message="the standby takes the Lease")
        handed_over = time.monotonic() - stopped_at
        assert successor in replicas and successor != leader
        assert handed_over < 20, f"hand-over took {handed_over:.1f} s"

        r.annotate("promote")
        after = r.wait_phase("Promoted", timeout=180)
        assert after["analysisStartedAt"] == before["analysisStartedAt"]
        assert duplicated_events(r) == [], r.describe()
        wait_for(lambda: set(r.deployments()) == {"production"}, timeout=120)
    finally:
        for replica in replicas.values():
            replica.stop()
        running_operator.start()


def test_a_leader_cut_off_by_a_hung_api_server_stops_before_the_standby_takes_over(
    rollout: Callable[[str], Rollout],
    cluster: LocalCluster,
    namespace: str,
    running_operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    running_operator.stop()
    proxy = HungProxy(cluster.apiserver_url)
    through = proxy.kubeconfig_through(cluster.kubeconfig, tmp_path / "through-proxy.kubeconfig")
    replicas: list[Replica] = []
    try:
        leader = Replica(cluster, namespace, "replica-a", kubeconfig=through)
        replicas.append(leader)
        wait_for(lambda: lease_holder(cluster, namespace) == "replica-a", timeout=30)
        replicas.append(Replica(cluster, namespace, "replica-b"))
        r = rollout("llama")
        r.apply(merged(load_example(), MANUAL))
        before = r.wait_phase("Analyzing", timeout=240)

        log = cluster.paths.log_file(leader.component)
        log_before = log.stat().st_size
        proxy.freeze()
        seen: dict[str, float] = {}
        since: list[float] = []  # its request count, read after the fence while it answers
        requests = "specdecode_operator_api_requests_total"

        def both_seen() -> bool:
            alive = leader.child.poll() is None
            if "fenced" not in seen:
                # Fenced, it exits to restart as a standby: an exit seen first is a fence too.
                if not alive or leader.metric("specdecode_operator_leader") == 0:
                    seen["fenced"] = time.monotonic()
                    if alive:
                        seen["requests"] = leader.metric(requests)
            elif alive and "requests" in seen:
                since.append(leader.metric(requests))
            if "taken" not in seen and lease_holder(cluster, namespace) == "replica-b":
                seen["taken"] = time.monotonic()
            return "fenced" in seen and "taken" in seen

        wait_for(both_seen, timeout=90, interval=0.1, message="fenced, then taken over")
        # The old leader stopped first (its fence: a renewal period before the Lease runs
        # out), and the standby waited for the whole lease duration.
        assert seen["fenced"] < seen["taken"], seen

        r.annotate("promote")
        after = r.wait_phase("Promoted", timeout=180)
        assert after["analysisStartedAt"] == before["analysisStartedAt"]
        assert duplicated_events(r) == [], r.describe()
        # Fenced means silent: not one request attempted since, not even into the proxy
        # (every read while it still answered; its /metrics may close under a read).
        if leader.child.poll() is None and "requests" in seen:
            with contextlib.suppress(OSError):
                since.append(leader.metric(requests))
        assert all(count == seen["requests"] for count in since), (seen, since)
        assert leader.child.wait(timeout=60) == 1  # exits to restart as a standby
        # ... because it fenced itself, not because it crashed (which also exits 1)
        assert ": fenced" in log.read_bytes()[log_before:].decode(errors="replace")
    finally:
        for replica in replicas:
            replica.stop()
        proxy.close()
        running_operator.start()


def _only_production(r: Rollout) -> bool:
    return set(r.deployments()) == {"production"}


def _no_pods(r: Rollout, role: str) -> bool:
    return r.pods(role) == []


def _none_labelled(cluster: LocalCluster, namespace: str, kind: str) -> bool:
    return labelled(cluster, namespace, kind, "specdecode.io/rollout") == []


def test_the_api_server_enforces_the_deadline_the_operator_sends(
    cluster: LocalCluster, namespace: str
) -> None:
    """Fencing rests on the API server's own deadline travelling with each request: the
    real server parses the `timeout` parameter (a malformed one is refused with 400, so it
    is read, not ignored) and a write carrying the operator's deadline lands."""
    clients = KubeClients.connect(
        str(cluster.kubeconfig), deadlines=OperatorSettings().api_deadlines()
    )
    body = kube.V1ConfigMap(metadata=kube.V1ObjectMeta(name="deadline"), data={"a": "1"})
    clients.core.create_namespaced_config_map(namespace, body)  # carries timeout=5s
    clients.core.patch_namespaced_config_map("deadline", namespace, {"data": {"a": "2"}})
    assert clients.core.read_namespaced_config_map("deadline", namespace).data == {"a": "2"}
    url = f"{clients.api.configuration.host}/api/v1/namespaces/{namespace}/configmaps"
    plain = kube.ApiClient(clients.api.configuration)
    refused: Any = plain.call_api("GET", with_server_timeout(url, "soon"), _request_timeout=(5, 10))
    refused.read()
    assert refused.status == 400 and b"invalid timeout" in refused.data, refused.data
    accepted = plain.call_api("GET", with_server_timeout(url, "5s"), _request_timeout=(5, 10))
    assert accepted.status == 200
