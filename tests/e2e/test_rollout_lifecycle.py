"""Issue 4, end to end: the resource's lifecycle with the manual gate, on the local cluster.

Given a SpecDecodeRollout of simulated engines (analysis.manual: true, so only the
`specdecode.io/action` annotation decides), when a user applies, promotes, aborts, edits,
deletes, or breaks things, then the operator's children, status and events say so.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from localcluster.handle import LocalCluster
from localcluster.manifests import load_example, merged
from localcluster.operator_process import OperatorProcess
from localcluster.rollouts import Rollout, engine_cmdline, speculative_arg
from localcluster.waiting import wait_for
from specdecode.adapters.render import SERVING_LABEL

pytestmark = pytest.mark.e2e

MANUAL = {"spec": {"analysis": {"manual": True, "progressDeadlineSeconds": 120}}}
EAGLE3 = {
    "method": "eagle3",
    "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "num_speculative_tokens": 3,
}


def manual_rollout(**spec_patch: Any) -> dict[str, Any]:
    """The simulator example with the manual gate and the given spec changes."""
    manifest: dict[str, Any] = merged(merged(load_example(), MANUAL), {"spec": spec_patch})
    return manifest


def given_analyzing(r: Rollout) -> dict[str, Any]:
    """The manual rollout applied and its shadows Ready: the analysis is under way."""
    r.apply(manual_rollout())
    return r.wait_phase("Analyzing", timeout=180)


def given_three_children(r: Rollout) -> None:
    """The manual rollout applied and its production, baseline and candidate created."""
    r.apply(manual_rollout())
    r.wait_phase(("Deploying", "Analyzing"), timeout=60)
    wait_for(lambda: len(r.deployments()) == 3, timeout=60, message="three children")


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})


def test_promote_rolls_production_to_the_candidate_config(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    given_analyzing(r)
    children = r.deployments()
    assert set(children) == {"production", "baseline", "candidate"}
    assert speculative_arg(engine_cmdline(cluster, r.pods("production")[0])) is None
    assert speculative_arg(engine_cmdline(cluster, r.pods("candidate")[0])) == EAGLE3

    r.annotate("promote")
    status = r.wait_phase("Promoted", timeout=180)
    assert status["stableSpeculative"] == EAGLE3
    assert condition(status, "Ready").get("status") == "True"
    assert "specdecode.io/action" not in r.get()["metadata"].get("annotations", {})
    wait_for(
        lambda: set(r.deployments()) == {"production"},
        timeout=60,
        message="shadow Deployments removed",
    )
    production = wait_for(
        lambda: _single_ready_pod(r, "production"),
        timeout=120,
        message="production pod with the new config Ready",
    )
    assert speculative_arg(engine_cmdline(cluster, production)) == EAGLE3
    models = _get_json(f"http://{production['status']['podIP']}:8000/v1/models")
    assert [m["id"] for m in models["data"]] == ["llama-3.1-8b-instruct"]
    assert {"AnalysisStarted", "Promoted"} <= set(r.event_reasons())


def test_abort_rolls_back_and_leaves_production_untouched(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    given_analyzing(r)
    production_uid = r.pods("production")[0]["metadata"]["uid"]

    r.annotate("abort")
    status = r.wait_phase("RolledBack", timeout=60)
    assert status.get("stableSpeculative") is None
    degraded = condition(status, "Degraded")
    assert degraded.get("status") == "True" and degraded.get("reason") == "Aborted"
    wait_for(
        lambda: set(r.deployments()) == {"production"},
        timeout=60,
        message="shadow Deployments removed",
    )
    assert [p["metadata"]["uid"] for p in r.pods("production")] == [production_uid]
    assert speculative_arg(engine_cmdline(cluster, r.pods("production")[0])) is None

    r.annotate("retry")
    r.wait_phase(("Deploying", "Analyzing"), timeout=60)


def test_spec_edit_mid_analysis_restarts_the_analysis(rollout: Callable[[str], Rollout]) -> None:
    r = rollout("llama")
    first = given_analyzing(r)

    r.apply(manual_rollout(speculative={**EAGLE3, "num_speculative_tokens": 5}))
    restarted = r.wait(
        lambda s: (
            s
            if s.get("candidateFingerprint") not in (None, first["candidateFingerprint"])
            else None
        ),
        timeout=60,
        message="a new candidate fingerprint",
    )
    assert restarted["candidateSpeculative"]["num_speculative_tokens"] == 5
    r.wait_phase("Analyzing", timeout=180)
    candidate = r.deployments()["candidate"]
    labels = candidate["spec"]["template"]["metadata"]["labels"]
    assert labels["specdecode.io/config"] == restarted["candidateFingerprint"]
    assert "AnalysisRestarted" in r.event_reasons()


def test_engine_image_edit_mid_analysis_restarts_the_analysis(
    rollout: Callable[[str], Rollout],
) -> None:
    """Issue 33: an Owned rollout's engines run a new image: the looks of the old one are
    not evidence about the new one, so the analysis restarts once, naming engine.image."""
    r = rollout("llama")
    first = given_analyzing(r)
    first_image: str = manual_rollout()["spec"]["engine"]["image"]
    image = f"{first_image.rsplit(':', 1)[0]}:dev"  # the simulator under another tag
    r.apply(manual_rollout(engine={"image": image, "vllmVersion": "0.33.0"}))
    restarted = r.wait(
        lambda s: s if s.get("analysisStartedAt") != first["analysisStartedAt"] else None,
        timeout=60,
        message="the analysis restarted",
    )
    assert restarted["analysisFingerprint"] != first["analysisFingerprint"]
    events = [e for e in r.events() if e.get("reason") == "EvidenceChanged"]
    assert len(events) == 1 and "engine.image" in events[0]["message"]
    r.wait_phase("Analyzing", timeout=180)
    container = r.deployments()["candidate"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == image
    assert r.event_reasons().count("EvidenceChanged") == 1


def test_deleting_the_rollout_removes_every_child(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    given_three_children(r)

    cluster.kubectl("delete", "sdr", r.name, "-n", r.namespace, "--wait=true", check=True)
    wait_for(lambda: not r.deployments(), timeout=60, message="children garbage-collected")
    services = cluster.kubectl(
        "get", "svc", "-n", r.namespace, "-o", "name", "-l", f"specdecode.io/rollout={r.name}"
    )
    assert services.stdout.strip() == ""


def test_children_deleted_or_edited_by_hand_are_restored(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    given_three_children(r)
    old_uid = r.deployments()["candidate"]["metadata"]["uid"]

    cluster.kubectl("delete", "deployment", f"{r.name}-candidate", "-n", r.namespace, check=True)
    cluster.kubectl("scale", "deployment", r.name, "-n", r.namespace, "--replicas=3", check=True)
    wait_for(
        lambda: (
            r.deployments().get("candidate", {}).get("metadata", {}).get("uid")
            not in (None, old_uid)
        ),
        timeout=30,
        message="candidate Deployment re-created",
    )
    wait_for(
        lambda: r.deployments()["production"]["spec"]["replicas"] == 1,
        timeout=30,
        message="production replicas restored to spec.serving.replicas",
    )


def test_full_gpu_pool_ends_in_rollback_with_the_schedulers_reason(
    rollout: Callable[[str], Rollout],
) -> None:
    r = rollout("llama")
    r.apply(
        merged(
            manual_rollout(
                gpuPool={"gpuProduct": "NVIDIA-L40S", "gpusPerReplica": 8, "tensorParallelSize": 8}
            ),
            {"spec": {"analysis": {"progressDeadlineSeconds": 15}}},
        )
    )
    status = r.wait_phase("RolledBack", timeout=90)
    assert "Insufficient nvidia.com/gpu" in status["message"]
    assert condition(status, "Degraded").get("reason") == "ProgressDeadlineExceeded"
    assert "Insufficient nvidia.com/gpu" in condition(status, "Degraded").get("message", "")


def test_operator_killed_mid_analysis_continues_where_it_was(
    rollout: Callable[[str], Rollout], running_operator: OperatorProcess
) -> None:
    r = rollout("llama")
    before = given_analyzing(r)
    uids = {role: d["metadata"]["uid"] for role, d in r.deployments().items()}

    running_operator.kill()
    running_operator.start()

    def reconciled_by_the_new_process() -> bool:
        # The fresh process's own metrics start at zero: a count means it has reconciled
        # (the status written before the kill proves nothing about the new process).
        text = running_operator.metrics_text()
        return any(
            line.startswith('specdecode_operator_reconcile_duration_seconds_count{outcome="ok"}')
            and float(line.split()[-1]) > 0
            for line in text.splitlines()
        )

    wait_for(reconciled_by_the_new_process, timeout=60, message="a reconcile after restart")
    after = r.status()
    assert after["phase"] == "Analyzing"
    assert after["analysisStartedAt"] == before["analysisStartedAt"]
    assert {role: d["metadata"]["uid"] for role, d in r.deployments().items()} == uids
    r.annotate("promote")
    r.wait_phase("Promoted", timeout=180)
    assert r.event_reasons().count("AnalysisStarted") == 1


def test_kubectl_shows_columns_and_explains_the_fields(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    given_analyzing(r)
    table = cluster.kubectl("get", "sdr", "-n", r.namespace, check=True).stdout
    header = table.splitlines()[0].split()
    assert header == ["NAME", "PHASE", "STAGE", "ALPHA", "ITL-RATIO", "VERDICT", "SOURCE", "AGE"]
    assert "Analyzing" in table.splitlines()[1]
    explained = cluster.kubectl("explain", "sdr.spec.speculative", check=True).stdout
    for field in ("num_speculative_tokens", "method", "prompt_lookup_max", "draft_tensor"):
        assert field in explained
    assert "Tokens drafted per step" in explained


def _single_ready_pod(r: Rollout, role: str) -> dict[str, Any] | None:
    pods = r.pods(role)
    if len(pods) != 1:
        return None
    ready = any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in pods[0]["status"].get("conditions", [])
    )
    return pods[0] if ready else None


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=5) as reply:
        document: dict[str, Any] = json.loads(reply.read())
        return document


def test_a_live_canary_stage_puts_candidate_pods_behind_the_production_service(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    canary = {
        "name": "canary",
        "concurrency": 2,
        "liveCanary": True,
        "warmupSeconds": 0,
        "minDurationSeconds": 600,
        "maxDurationSeconds": 600,
        "gates": [],
    }
    r.apply(merged(manual_rollout(), {"spec": {"analysis": {"stages": [canary]}}}))
    r.wait(
        lambda s: s if s.get("currentStage") == "canary" else None,
        timeout=180,
        message="the live canary stage running",
    )

    def serving_ips() -> set[str]:
        return _endpoint_ips(cluster, r.namespace, r.name)

    def serving_candidate() -> dict[str, Any] | None:
        # Entering the stage relabels the candidate's template (serving "true"), and the
        # status is written before the children: the pod from Deploying, Ready until its
        # replacement is, never joins the Service (picked once: CI rehearsal, session 24).
        pod = _single_ready_pod(r, "candidate")
        serving = pod is not None and pod["metadata"]["labels"].get(SERVING_LABEL) == "true"
        return pod if serving else None

    candidate = wait_for(serving_candidate, timeout=120, message="serving candidate pod Ready")
    production = r.pods("production")[0]
    wait_for(
        lambda: {candidate["status"]["podIP"], production["status"]["podIP"]} <= serving_ips(),
        timeout=60,
        message="candidate and production pods behind the production Service",
    )
    r.annotate("abort")
    r.wait_phase("RolledBack", timeout=60)
    wait_for(
        lambda: serving_ips() == {production["status"]["podIP"]},
        timeout=60,
        message="only production pods behind the production Service after rollback",
    )


def _endpoint_ips(cluster: LocalCluster, namespace: str, service: str) -> set[str]:
    out = cluster.kubectl(
        "get",
        "endpointslices",
        "-n",
        namespace,
        "-o",
        "json",
        "-l",
        f"kubernetes.io/service-name={service}",
        check=True,
    )
    return {
        address
        for item in json.loads(out.stdout)["items"]
        for endpoint in item.get("endpoints") or []
        if (endpoint.get("conditions") or {}).get("ready", True)
        for address in endpoint["addresses"]
    }


# docs/install.md's check ("Install on a real cluster"): the Degraded condition in one line.
SHOW_DEGRADED = (
    'jsonpath={range .status.conditions[?(@.type=="Degraded")]}'
    '{.status} {.reason}: {.message}{"\\n"}{end}'
)


def _shadow_pods_named(r: Rollout) -> list[str] | None:
    names = [p["metadata"]["name"] for role in ("baseline", "candidate") for p in r.pods(role)]
    return names if len(names) == 2 else None


def _ready_since(pod: dict[str, Any]) -> datetime | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready: dict[str, Any] = next((c for c in conditions if c["type"] == "Ready"), {})
    if ready.get("status") != "True":
        return None
    return datetime.fromisoformat(ready["lastTransitionTime"].replace("Z", "+00:00"))


def _scrape(cluster: LocalCluster, r: Rollout, pods: list[str], value: str) -> None:
    for pod in pods:
        cluster.kubectl(
            "annotate", "pod", pod, "-n", r.namespace, f"prometheus.io/scrape={value}",
            "--overwrite", check=True,
        )  # fmt: skip


def test_engines_prometheus_does_not_scrape_make_the_rollout_degraded_within_a_minute(
    rollout: Callable[[str], Rollout], cluster: LocalCluster, running_operator: OperatorProcess
) -> None:
    """Issue 25: an unscraped engine is Degraded MetricsUnavailable, not a run-out clock.

    The harness' Prometheus scrapes pods annotated `prometheus.io/scrape: "true"` (as a
    plain Prometheus with the usual annotation rule does); turning that off on the shadow
    pods as soon as they exist is a Prometheus that does not scrape them (the series an
    early scrape left are marked stale when the target goes).
    """
    log = cluster.paths.log_file("operator").read_text()
    assert "vLLM engine series (vllm:num_requests_running)" in log  # the start-up line
    r = rollout("unscraped")
    r.apply(manual_rollout())
    pods = wait_for(lambda: _shadow_pods_named(r), timeout=60, message="both shadow pods")
    _scrape(cluster, r, pods, "false")

    def ready_at() -> datetime | None:
        pods = [p for role in ("baseline", "candidate") for p in r.pods(role)]
        times = [t for t in map(_ready_since, pods) if t is not None]
        # the first engine Ready: its grace is the first to end, and with it the condition
        return min(times) if len(pods) == len(times) == 2 else None

    engines_ready = wait_for(ready_at, timeout=120, message="both shadow engines Ready")

    def unavailable(status: dict[str, Any]) -> dict[str, Any] | None:
        found = condition(status, "Degraded")
        return found if found.get("reason") == "MetricsUnavailable" else None

    def naming_both(status: dict[str, Any]) -> dict[str, Any] | None:
        # The engine Ready first is named first; the other joins when its grace ends
        # (the condition keeps its transition time).
        found = unavailable(status)
        return found if found and all(pod in found["message"] for pod in pods) else None

    degraded = r.wait(naming_both, timeout=90, message="Degraded MetricsUnavailable, both pods")
    since = datetime.fromisoformat(degraded["lastTransitionTime"].replace("Z", "+00:00"))
    elapsed = (since - engines_ready).total_seconds()
    print(f"engines Ready to Degraded MetricsUnavailable: {elapsed:.0f} s")
    assert degraded["status"] == "True" and elapsed <= 60, degraded
    assert r.status()["phase"] == "Analyzing"  # a condition over the phase, no verdict
    query = degraded["message"].split("`")[1]
    assert query.startswith(f'vllm:num_requests_running{{namespace="{r.namespace}",pod=~"')
    assert cluster.prometheus_query(query) == []  # the named query is empty indeed
    assert "monitoring.enginePodMonitor.enabled" in degraded["message"]
    shown = cluster.kubectl("get", "sdr", r.name, "-n", r.namespace, "-o", SHOW_DEGRADED)
    assert shown.stdout.startswith("True MetricsUnavailable: Prometheus has no series"), shown

    _scrape(cluster, r, pods, "true")  # Prometheus scrapes them again: the condition goes
    r.wait(lambda s: unavailable(s) is None, timeout=60, message="MetricsUnavailable cleared")
    assert cluster.prometheus_query(query) != []
