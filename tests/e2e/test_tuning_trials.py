"""Issue 15, end to end: a SpecDecodeTuning finds what pays where, at real time.

Three tunings run at once on the simulator, each trial a baseline and a candidate engine
with their own load pods (the rollout's machinery), judged by the gates' statistics:
- Llama-3.1-8B on code: suffix decoding beats EAGLE-3 at 8 and 32 streams (the physics:
  1.73x and 1.59x against 1.02x and 0.93x), so suffix wins every band;
- Llama-3.1-8B on chat: EAGLE-3 at k = 2 beats n-gram (1.51x / 1.35x against 1.14x /
  1.09x, measured; k = 3's P99 chunk gap at 32 streams, ~1.40x, sits on the default 1.4
  tail constraint, so which of the two led there was a coin toss), and
  with `apply: true` the tuning starts a SpecDecodeRollout with it;
- Llama-3.3-70B on 4 A100s (TP 4), a head accepting half its tokens: EAGLE-3 pays at 16
  streams (1.43x measured) and not at 256 (the verify of 4 tokens a sequence makes the
  step compute-bound: 1.01x already at 128), so its break-even lies inside the ladder,
  and the k schedule turns speculation off above it.
GB10 and A100-70B steps (tens of ms) keep this 2-core machine's load clients far from
saturating (a look refuses to measure a lagging client). Every trial's engines, load pods
and data are gone at the end; the report ConfigMap, status and the plugin agree.
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.handle import LocalCluster
from localcluster.operator_process import OperatorProcess
from localcluster.waiting import WaitTimeout, wait_for

# The load estimate is CPU-bound: beside another worker's analysis the shadow load
# saturated (a two-worker rehearsal), so `make test` runs this alone (cpu_exclusive).
pytestmark = [pytest.mark.e2e, pytest.mark.cpu_exclusive]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "simulator" / "specdecode-tuning.yaml"
EAGLE3_8B = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
EAGLE3_70B = "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"
TIMEOUT = 720


def tuning_manifest(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    """The simulator example with `spec` fields replaced."""
    manifest: dict[str, Any] = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    manifest["metadata"] = {"name": name, "namespace": namespace}
    manifest["spec"].update(spec)
    return manifest


def kubectl_json(cluster: LocalCluster, *args: str) -> dict[str, Any]:
    out = cluster.kubectl(*args, "-o", "json")
    assert out.returncode == 0, out.stderr
    document: dict[str, Any] = json.loads(out.stdout)
    return document


def tuning_status(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (
        kubectl_json(cluster, "get", "sdt", name, "-n", namespace).get("status") or {}
    )
    return status


def wait_finished(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        status = tuning_status(cluster, namespace, name)
        return status if status.get("phase") in ("Succeeded", "Failed") else None

    try:
        return wait_for(finished, timeout=TIMEOUT, interval=2.0, message=f"tuning {name} done")
    except WaitTimeout as error:
        status = json.dumps(tuning_status(cluster, namespace, name), indent=1)[:3000]
        raise WaitTimeout(f"{error}\n{status}") from None


def report_of(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = kubectl_json(
        cluster, "get", "configmap", f"{name}-report", "-n", namespace
    )["data"]
    return data


def leftovers(cluster: LocalCluster, namespace: str, name: str) -> list[str]:
    """Trial objects of the tuning still present (engines, services, load pods, data)."""
    found = []
    for kind in ("deployments", "services", "pods", "configmaps"):
        items = kubectl_json(cluster, "get", kind, "-n", namespace)["items"]
        for item in items:
            item_name = item["metadata"]["name"]
            if item_name.startswith(f"{name}-t") and not item["metadata"].get("deletionTimestamp"):
                found.append(f"{kind}/{item_name}")
    return found


def no_leftovers(cluster: LocalCluster, namespace: str, name: str) -> bool:
    """Whether every trial object of the tuning is gone."""
    return not leftovers(cluster, namespace, name)


def winner_labels(report: dict[str, Any]) -> dict[int, str]:
    """Each load's winner as "method k=.." (or "none")."""
    labels = report["labels"]
    return {w["load"]: labels.get(w["config"], w["config"]) for w in report["winners"]}


@pytest.mark.timeout(900)
def test_tuning_picks_the_config_that_pays_per_workload_and_load(
    cluster: LocalCluster, namespace: str, running_operator: OperatorProcess
) -> None:
    code = tuning_manifest("code", namespace)
    chat = tuning_manifest(
        "chat",
        namespace,
        traffic={"builtinWorkload": "chat", "maxTokens": 64},
        searchSpace={
            "candidates": [
                {"method": "eagle3", "model": EAGLE3_8B, "num_speculative_tokens": 2},
                {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
            ]
        },
        apply=True,
    )
    big = tuning_manifest(
        "big",
        namespace,
        model={
            "name": "meta-llama/Llama-3.3-70B-Instruct",
            "servedModelName": "llama-3.3-70b-instruct",
        },
        gpuPool={  # the tainted 8-GPU H200 node, tolerated: the 8B trials keep the H100s
            "gpuProduct": "NVIDIA-H200",
            "gpusPerReplica": 4,
            "tensorParallelSize": 4,
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
        },
        traffic={"builtinWorkload": "chat", "maxTokens": 256},
        searchSpace={
            "candidates": [{"method": "eagle3", "model": EAGLE3_70B, "num_speculative_tokens": 3}]
        },
        concurrencyLadder=[16, 256],
        budget={"maxParallelTrials": 1, "maxGpuSeconds": 8000},
        # This one is about where the speedup crosses 1. Its P99 chunk gap at 16 streams
        # measured 1.31x on one 90 s trial, near the default 1.4 constraint (over it,
        # plain decoding would win the band): the constraint is relaxed, and said so.
        constraints={"maxTailRatio": 1.6},
    )
    big["spec"]["engine"]["env"] = [
        {"name": "SPECDECODE_SIM_GPU", "value": "A100"},
        {"name": "SPECDECODE_SIM_ACCEPTANCE", "value": "0.5"},
    ]
    for manifest in (code, chat, big):
        applied = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
        assert applied.returncode == 0, applied.stderr

    statuses = {name: wait_finished(cluster, namespace, name) for name in ("code", "chat", "big")}
    reports = {
        name: json.loads(report_of(cluster, namespace, name)["report.json"]) for name in statuses
    }
    for name, status in statuses.items():
        print(f"{name}: {status['phase']} - {status.get('message')}")
        print(report_of(cluster, namespace, name)["report.md"])
        assert status["phase"] == "Succeeded", status

    # Code: suffix wins every load; EAGLE-3 was dropped, and tuning cost less than a sweep.
    assert set(winner_labels(reports["code"]).values()) == {"suffix k=8"}, reports["code"]
    print(
        "GPU-seconds against an exhaustive sweep:",
        {name: (r["gpu_seconds"], r["exhaustive_gpu_seconds"]) for name, r in reports.items()},
    )
    # Chat: an EAGLE-family head wins every load, and the gated rollout of it was started.
    assert set(winner_labels(reports["chat"]).values()) == {"eagle3 k=2"}, reports["chat"]
    started = kubectl_json(cluster, "get", "sdr", "chat", "-n", namespace)
    assert started["spec"]["speculative"]["method"] == "eagle3"
    assert "SpecDecodeRollout chat created" in statuses["chat"]["message"]
    cluster.kubectl("delete", "sdr", "chat", "-n", namespace, "--wait=false", check=True)
    # 70B on A100: EAGLE-3 pays at 16 and loses at 256; the crossing is bounded between.
    big_report = reports["big"]
    assert winner_labels(big_report) == {16: "eagle3 k=3", 256: "none"}, big_report
    (crossing,) = big_report["break_even"].values()
    assert crossing["above"] == 16 and crossing["at_or_below"] == 256, crossing
    schedule = statuses["big"]["schedule"]
    assert schedule[0][2] == 3 and schedule[-1][2] == 0, schedule
    assert 16 < schedule[-1][0] <= 256, schedule

    # Status, ConfigMap and the plugin tell the same story; nothing of a trial is left.
    for name in statuses:
        assert statuses[name]["reportConfigMap"] == f"{name}-report"
        wait_for(
            functools.partial(no_leftovers, cluster, namespace, name),
            timeout=60,
            message=f"trials of {name} removed",
        )
    picture = Path(cluster.paths.state_dir) / "tuning-big.svg"
    env = cluster.env()  # kubectl finds kubectl-specdecode on PATH (the venv's bin)
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    command = [str(cluster.bin_dir / "kubectl"), "specdecode", "tuning", "big"]
    command += ["-n", namespace, "--svg", str(picture)]
    plugin = subprocess.run(
        command,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    print(plugin.stdout)
    assert plugin.returncode == 0, plugin.stderr
    assert "eagle3 k=3" in plugin.stdout
    assert picture.read_text() == report_of(cluster, namespace, "big")["report.svg"]
