"""Issue 25, end to end: judge a vLLM Deployment another tool owns, and hand the verdict back.

Given a plain vLLM Deployment (the simulator image) serving through its own Service, as a
team applies it from Git, when a rollout names it in `workloadRef` (GitOps, the default; the
adoption example's four-line rollout: model, served name, image, release and port are read
from the source, and `kubectl get sdr` shows it), then the operator analyses an EAGLE-3
config on shadows copied from its pod template and stripped of the labels the Service
selects on; the source's spec, metadata and replica count stay exactly as they were; no
shadow pod is ever an endpoint of the source's Service (its EndpointSlices are watched for
the whole run); the passed config waits for the owner (AwaitingOwner) with the exact patch
(`kubectl specdecode patch`), which the test applies as the owner would, and the rollout
becomes Promoted with Verified. A change of the source's template mid-analysis restarts the
analysis on the new baseline, and deleting a rollout leaves the source as its owner left it.
Beside that analysis (issue 34 item 5), a second rollout adopts the same Deployment on
Mirror traffic through the splitter: the owner's own HTTPRoute (in Git) mirrors to the
Service `status.mirror` names; the test feeds the splitter directly, as that mirror (or a
mesh's) would, and the rollout reaches a verdict on paired client-side evidence while the
operator creates no HTTPRoute and leaves the owner's exactly as written.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, watch

from localcluster.handle import LocalCluster
from localcluster.live_traffic import live_users
from localcluster.manifests import REPO, load_example, merged
from localcluster.rollouts import Rollout, engine_cmdline, run_plugin, speculative_arg
from localcluster.waiting import wait_for

pytestmark = pytest.mark.e2e

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
SERVED = "llama-3.1-8b-instruct"
IMAGE = "ghcr.io/specdecode-operator/vllm-sim:v0.33.0"
EAGLE3 = {
    "method": "eagle3",
    "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "num_speculative_tokens": 3,
}
ACCEPTANCE_ONLY = {
    "name": "acceptance",
    "concurrency": 4,
    "warmupSeconds": 5,
    "minDurationSeconds": 20,
    "maxDurationSeconds": 180,
    "gates": [{"name": "alpha", "type": "Acceptance"}],
}


ARGV = [MODEL, "--port", "8000", "--served-model-name", SERVED, "--max-num-seqs", "64"]


def source_manifests(
    namespace: str, name: str = "chat", command_only: bool = False
) -> list[dict[str, Any]]:
    """The team's own Deployment and Service, as they would keep them in Git; with
    `command_only` the whole vLLM argv is in `command` (no `args` for anyone to own)."""
    labels = {"app": name, "team": "ml"}
    argv = (
        {"command": ["vllm", "serve", *ARGV]}
        if command_only
        else {
            "command": ["vllm", "serve"],
            "args": ARGV,
        }
    )
    container = {
        "name": "vllm",
        "image": IMAGE,
        **argv,
        "env": [
            {"name": "SPECDECODE_SIM_GPU", "value": "L40S"},
            {"name": "SPECDECODE_VLLM_VERSION", "value": "0.33.0"},
        ],
        "ports": [{"name": "http", "containerPort": 8000}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 2},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app": name}, "ports": [{"port": 8000, "targetPort": 8000}]},
    }
    return [deployment, service]


def adopting(
    stages: list[dict[str, Any]],
    manual: bool = False,
    source: str = "chat",
    strategy: str = "GitOps",
) -> dict[str, Any]:
    """The simulator example, judging Deployment `source` instead of owning production."""
    patch = {
        "spec": {
            "workloadRef": {"name": source, "keepLabels": ["team"]},
            "promotion": {"strategy": strategy},
            "model": {"name": MODEL, "servedModelName": SERVED},
            "engine": {"image": IMAGE},
            "analysis": {"manual": manual, "stages": stages, "progressDeadlineSeconds": 180},
        }
    }
    document: dict[str, Any] = merged(load_example(), patch)
    return document


ADOPTION_EXAMPLE = REPO / "examples" / "adoption" / "plain-deployment.yaml"


def four_line_rollout(stages: list[dict[str, Any]]) -> dict[str, Any]:
    """The adoption example's rollout as written (only `workloadRef: {name: chat}` and
    `speculative`: model and engine are read from the source), with short stages and the
    simulator example's traffic timing so the analysis ends in minutes."""
    document = next(
        d
        for d in yaml.safe_load_all(ADOPTION_EXAMPLE.read_text())
        if d and d["kind"] == "SpecDecodeRollout"
    )
    assert set(document["spec"]) == {"workloadRef", "speculative"}, document["spec"]
    assert document["spec"]["workloadRef"] == {"name": "chat"}
    timing = load_example()["spec"]["analysis"]
    analysis = {k: v for k, v in timing.items() if k in ("traffic", "intervalSeconds")}
    shaped: dict[str, Any] = merged(
        document,
        {"spec": {"analysis": {**analysis, "stages": stages, "progressDeadlineSeconds": 180}}},
    )
    return shaped


MIRROR_STAGE = {k: v for k, v in ACCEPTANCE_ONLY.items() if k != "concurrency"}  # live pace


def adopted_mirror() -> dict[str, Any]:
    """Deployment chat judged on live requests through the splitter: no httpRoute (the
    source's routes are its owner's), the splitter fed by the owner's own mirror."""
    document = adopting([MIRROR_STAGE])
    document["spec"]["analysis"]["traffic"] = {"source": "Mirror", "requestTimeoutSeconds": 10}
    return document


def owners_route(namespace: str, splitter_service: str) -> dict[str, Any]:
    """The owner's HTTPRoute as kept in Git: chat's traffic, mirrored to the splitter."""
    name, port = splitter_service.split(":")
    mirror = {"backendRef": {"name": name, "port": int(port)}, "percent": 100}
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "chat", "namespace": namespace},
        "spec": {
            "parentRefs": [{"name": "inference-gateway"}],
            "rules": [
                {
                    "filters": [{"type": "RequestMirror", "requestMirror": mirror}],
                    "backendRefs": [{"name": "chat", "port": 8000}],
                }
            ],
        },
    }


def routes_view(cluster: LocalCluster, namespace: str) -> dict[str, Any]:
    """Every HTTPRoute of the namespace: name -> (resourceVersion, annotations, spec)."""
    out = cluster.kubectl("get", "httproutes", "-n", namespace, "-o", "json", check=True)
    return {
        item["metadata"]["name"]: (
            item["metadata"]["resourceVersion"],
            item["metadata"].get("annotations"),
            item["spec"],
        )
        for item in json.loads(out.stdout)["items"]
    }


def mirror_filters(spec: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(backend, port, percent) of every RequestMirror filter of a route's spec."""
    return [
        (m["backendRef"]["name"], m["backendRef"]["port"], m.get("percent", 100))
        for rule in spec.get("rules", [])
        for f in rule.get("filters", [])
        if (m := f.get("requestMirror"))
    ]


def splitter_url(r: Rollout) -> str | None:
    """The splitter pod's mirror port (its Service's one endpoint), once it has an address."""
    pods = [p for p in r.pods("shadow-splitter") if (p.get("status") or {}).get("podIP")]
    return f"http://{pods[0]['status']['podIP']}:8080" if pods else None


def judge_adopted_mirror(cluster: LocalCluster, mirrored: Rollout) -> None:
    """Feed the adopted Mirror rollout's splitter until its verdict; check it rests on
    paired evidence and that its Service stays for the owner's mirror."""
    url = mirrored.wait(lambda _: splitter_url(mirrored), timeout=240, message="the splitter")
    with live_users(url, SERVED, concurrency=4) as users:
        status = mirrored.wait(
            lambda s: s if s.get("reason") == "AwaitingOwner" or s.get("verdict") else None,
            timeout=300,
            message="the adopted Mirror rollout's verdict",
        )
    assert users.accepted > 0, users  # the splitter took the copies (202, never held)
    assert status["reason"] == "AwaitingOwner", mirrored.describe()  # passed, owner's turn
    stage = next(s for s in status["stages"] if s["name"] == MIRROR_STAGE["name"])
    assert stage["evidence"] == "ClientSidePaired", stage
    assert stage["load"]["requests"] > 0, stage
    assert [g["verdict"] for g in stage["gates"]] == ["Successful"], stage["gates"]
    # the analysis over: the splitter goes, its Service stays for the owner's mirror
    mirrored.wait(lambda _: not mirrored.pods("shadow-splitter") or None, timeout=120,
                  message="no splitter pod")  # fmt: skip
    service = cluster.kubectl("get", "service", f"{mirrored.name}-splitter", "-n",
                              mirrored.namespace, "-o", "json")  # fmt: skip
    assert service.returncode == 0, service.stderr
    assert json.loads(service.stdout)["spec"]["ports"][0]["port"] == 8080


def source_view(cluster: LocalCluster, namespace: str, name: str = "chat") -> dict[str, Any]:
    """What the owner owns: the spec, labels, annotations, generation and field managers
    (the status, which the Deployment controller writes, is left out)."""
    out = cluster.kubectl(
        "get", "deployment", name, "-n", namespace, "-o", "json", "--show-managed-fields",
        check=True,
    )  # fmt: skip
    meta = json.loads(out.stdout)["metadata"]
    spec = json.loads(out.stdout)["spec"]
    managers = sorted(
        (m["manager"], m["operation"])
        for m in meta["managedFields"]
        if m.get("subresource") != "status"
    )
    assert managers, "no field managers: the view cannot show a write"
    return {
        "spec": spec,
        "labels": meta.get("labels"),
        "annotations": meta.get("annotations"),
        "generation": meta["generation"],
        "managers": managers,
    }


class EndpointWatch:
    """Every pod ever listed in the Service's EndpointSlices, from a watch kept open for
    the whole test (a re-watch resumes where the last one stopped)."""

    def __init__(self, api: client.ApiClient, namespace: str, service: str) -> None:
        self.pods: set[str] = set()
        self._api, self._namespace, self._service = api, namespace, service
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> EndpointWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def _run(self) -> None:
        discovery = client.DiscoveryV1Api(self._api)
        version = None
        while not self._stop.is_set():
            stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                discovery.list_namespaced_endpoint_slice,
                self._namespace,
                label_selector=f"kubernetes.io/service-name={self._service}",
                resource_version=version,
                timeout_seconds=5,
            )
            for event in stream:
                obj = event["object"]
                version = obj.metadata.resource_version
                for endpoint in obj.endpoints or []:
                    if endpoint.target_ref is not None:
                        self.pods.add(endpoint.target_ref.name)


def apply_source(
    cluster: LocalCluster, namespace: str, name: str = "chat", command_only: bool = False
) -> None:
    """The source's Deployment and Service, applied with kubectl as a user would, Ready."""
    for manifest in source_manifests(namespace, name, command_only):
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest), check=True)
    cluster.kubectl(
        "rollout", "status", f"deployment/{name}", "-n", namespace, "--timeout=120s", check=True
    )


@pytest.fixture
def source(cluster: LocalCluster, namespace: str) -> Iterator[None]:
    """Deployment and Service chat (args written by the owner with kubectl apply)."""
    apply_source(cluster, namespace)
    yield


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})


def test_a_gitops_owned_deployment_is_judged_on_copies_and_promoted_by_its_owner(
    source: None,
    rollout: Callable[[str], Rollout],
    cluster: LocalCluster,
    namespace: str,
    kube_api: client.ApiClient,
) -> None:
    before = source_view(cluster, namespace)
    r = rollout("chat-eagle")
    mirrored = rollout("chat-mirror")  # the same source on live traffic, side by side
    with EndpointWatch(kube_api, namespace, "chat") as endpoints:
        r.apply(four_line_rollout([ACCEPTANCE_ONLY]))  # no model, no engine: read from chat
        mirrored.apply(adopted_mirror())
        told = mirrored.wait(lambda s: s.get("mirror"), timeout=60, message="status.mirror")
        assert told == {"splitterService": "chat-mirror-splitter:8080"}, told  # no route
        owner_route = owners_route(namespace, told["splitterService"])
        cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(owner_route), check=True)
        routes_before = routes_view(cluster, namespace)
        assert list(routes_before) == ["chat"], routes_before
        written = owner_route["spec"]["rules"][0]["filters"]
        analyzing = r.wait_phase("Analyzing", timeout=180)
        assert {
            key: analyzing["workload"].get(key)
            for key in ("source", "image", "model", "servedModelName", "vllmVersion")
        } == {
            "source": "Deployment/chat",
            "image": IMAGE,
            "model": MODEL,
            "servedModelName": SERVED,
            "vllmVersion": "0.33.0",
        }
        printed_row = cluster.kubectl(
            "get", "sdr", r.name, "-n", namespace, "-o", "wide", check=True
        ).stdout  # fmt: skip
        header, row = printed_row.splitlines()[:2]
        assert "SOURCE" in header and "Deployment/chat" in row and IMAGE in row, printed_row
        shadows = r.deployments()
        assert set(shadows) == {"baseline", "candidate"}, "production is not the operator's"
        for role in ("baseline", "candidate"):
            pod = r.pods(role)[0]
            assert not {"app", "team"} & set(pod["metadata"]["labels"]), pod["metadata"]
        assert speculative_arg(engine_cmdline(cluster, r.pods("baseline")[0])) is None
        assert speculative_arg(engine_cmdline(cluster, r.pods("candidate")[0])) == EAGLE3
        assert source_view(cluster, namespace) == before, "the source changed mid-analysis"

        judge_adopted_mirror(cluster, mirrored)
        delete(cluster, mirrored)
        routes_after = routes_view(cluster, namespace)
        assert routes_after == routes_before, "the operator wrote a route"
        _, marks, spec = routes_after["chat"]
        assert "specdecode.io/mirrors" not in (marks or {}), marks
        assert mirror_filters(spec) == mirror_filters({"rules": [{"filters": written}]})

        status = r.wait(
            lambda s: s if s.get("reason") == "AwaitingOwner" else None,
            timeout=240,
            message="the passed config awaiting its owner",
        )
        assert status["phase"] == "Promoting"
        assert status["workload"]["droppedLabels"] == ["app", "team"]  # no keepLabels
        assert source_view(cluster, namespace) == before, "the source changed at the verdict"
        printed = run_plugin(cluster, "patch", r.name, "-n", namespace)
        assert printed.returncode == 0, printed.stderr
        patch = json.loads(printed.stdout)
        assert patch == json.loads(status["workload"]["ownerPatch"])
        files = wait_for(
            lambda: _config_map(cluster, namespace, f"{r.name}-promotion"),
            timeout=30,
            message="the promotion ConfigMap",
        )
        assert json.loads(files["strategic-merge-patch.json"]) == patch
        kustomize = yaml.safe_load(files["kustomize-patch.yaml"])
        assert (kustomize["kind"], kustomize["metadata"]["name"]) == ("Deployment", "chat")

        # The owner applies it (in Git, then synced; here with kubectl).
        cluster.kubectl(
            "patch", "deployment", "chat", "-n", namespace, "--type", "strategic",
            "-p", json.dumps(patch), check=True,
        )  # fmt: skip
        promoted = r.wait_phase("Promoted", timeout=180)
        assert condition(promoted, "Verified").get("status") == "True", promoted
        assert promoted["stableSpeculative"] == EAGLE3
        owner_pods = [
            p
            for p in _pods(cluster, namespace, "app=chat")
            if not p["metadata"].get("deletionTimestamp")
        ]
        assert owner_pods and all(
            speculative_arg(engine_cmdline(cluster, p)) == EAGLE3 for p in owner_pods
        )
        wait_for(lambda: not r.deployments(), timeout=60, message="shadows removed")
    assert endpoints.pods, "the EndpointSlice watch saw nothing: it cannot vouch for anything"
    leaked = {p for p in endpoints.pods if p.startswith((f"{r.name}-", f"{mirrored.name}-"))}
    assert not leaked, f"shadow pods served the source's Service: {leaked}"
    assert all(pod.startswith("chat-") for pod in endpoints.pods), endpoints.pods

    after_owner = source_view(cluster, namespace)
    delete(cluster, r)
    assert source_view(cluster, namespace) == after_owner, "deleting the rollout changed it"


def test_a_source_template_change_mid_analysis_restarts_on_the_new_baseline(
    source: None, rollout: Callable[[str], Rollout], cluster: LocalCluster, namespace: str
) -> None:
    before = source_view(cluster, namespace)
    r = rollout("chat-manual")
    r.apply(adopting([ACCEPTANCE_ONLY], manual=True))
    first = r.wait_phase("Analyzing", timeout=180)
    assert source_view(cluster, namespace) == before
    for role in ("baseline", "candidate"):
        labels = r.pods(role)[0]["metadata"]["labels"]
        assert "app" not in labels and labels["team"] == "ml", labels  # team: in keepLabels
    cluster.kubectl(
        "set", "env", "deployment/chat", "-n", namespace, "SPECDECODE_SIM_SEED=7", check=True
    )
    r.wait(
        lambda s: (
            (s.get("workload") or {}).get("templateHash")
            not in (None, first["workload"]["templateHash"])
        ),
        timeout=60,
        message="the new template seen",
    )
    assert "SourceChanged" in r.event_reasons()
    r.wait_phase("Analyzing", timeout=180)

    def baseline_has_new_env() -> bool:
        pods = r.pods("baseline")
        env = (
            {e["name"] for e in pods[0]["spec"]["containers"][0].get("env", [])} if pods else set()
        )
        return "SPECDECODE_SIM_SEED" in env

    wait_for(baseline_has_new_env, timeout=120, message="the baseline copies the new template")
    owned_by_user = source_view(cluster, namespace)
    delete(cluster, r)
    assert source_view(cluster, namespace) == owned_by_user


PROMOTION_MANAGER = "specdecode-operator-promotion"


def owned_leaves(fields: dict[str, Any], prefix: str = "") -> set[str]:
    """The leaf paths of a managedFields fieldsV1 tree ("." marks a set's own entry)."""
    leaves: set[str] = set()
    for key, below in fields.items():
        if key == ".":
            continue
        path = f"{prefix}/{key}"
        leaves |= owned_leaves(below, path) if below else {path}
    return leaves


def test_patch_applies_the_args_alone_and_reports_an_owner_it_would_overrule(
    source: None, rollout: Callable[[str], Rollout], cluster: LocalCluster, namespace: str
) -> None:
    # An owner who wrote the args (kubectl apply owns them): the apply conflicts.
    before = source_view(cluster, namespace)
    owned = rollout("chat-patch")
    owned.apply(adopting([ACCEPTANCE_ONLY], manual=True, strategy="Patch"))
    owned.wait_phase("Analyzing", timeout=180)
    owned.annotate("promote")
    refused = owned.wait(
        lambda s: s if condition(s, "Degraded").get("reason") == "PatchConflict" else None,
        timeout=60,
        message="the conflict reported",
    )
    assert refused["phase"] == "Promoting" and refused["reason"] == "AwaitingOwner"
    message = condition(refused, "Degraded")["message"]
    assert 'conflict with "kubectl-client-side-apply"' in message, message
    assert ".args" in message, message
    assert source_view(cluster, namespace) == before, "a conflicting owner was overwritten"
    delete(cluster, owned)

    # An owner whose argv is all in `command`: nobody owns args, the apply lands.
    apply_source(cluster, namespace, "chat-cmd", command_only=True)
    r = rollout("chat-cmd-patch")
    r.apply(adopting([ACCEPTANCE_ONLY], manual=True, source="chat-cmd", strategy="Patch"))
    r.wait_phase("Analyzing", timeout=180)
    r.annotate("promote")
    promoted = r.wait_phase("Promoted", timeout=180)
    assert condition(promoted, "Verified").get("status") == "True", promoted
    out = cluster.kubectl(
        "get", "deployment", "chat-cmd", "-n", namespace, "-o", "json", "--show-managed-fields",
        check=True,
    )  # fmt: skip
    deployment = json.loads(out.stdout)
    ours = [m for m in deployment["metadata"]["managedFields"] if m["manager"] == PROMOTION_MANAGER]
    assert [m["operation"] for m in ours] == ["Apply"], ours
    vllm = 'k:{"name":"vllm"}'
    assert owned_leaves(ours[0]["fieldsV1"]) == {
        f"/f:spec/f:template/f:spec/f:containers/{vllm}/f:args",
        f"/f:spec/f:template/f:spec/f:containers/{vllm}/f:name",
    }
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["vllm", "serve", *ARGV]
    assert container["args"] == [
        "--speculative-config",
        json.dumps(EAGLE3, separators=(",", ":"), sort_keys=True),
    ]


def delete(cluster: LocalCluster, r: Rollout) -> None:
    """Delete the rollout and wait until its shadows are gone too."""
    cluster.kubectl("delete", "sdr", r.name, "-n", r.namespace, "--timeout=60s", check=True)
    wait_for(lambda: not r.deployments(), timeout=60, message="shadows garbage-collected")


def _config_map(cluster: LocalCluster, namespace: str, name: str) -> dict[str, str] | None:
    out = cluster.kubectl("get", "configmap", name, "-n", namespace, "-o", "json")
    if out.returncode != 0:
        return None
    data: dict[str, str] = json.loads(out.stdout).get("data") or {}
    return data


def _pods(cluster: LocalCluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    out = cluster.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json", check=True)
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items
