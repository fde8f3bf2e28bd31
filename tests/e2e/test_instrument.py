"""Issue 10, end to end: the shadow load runs in its own pods, not in the operator.

Given a rollout whose stage replays prompts at real time (no slowed simulator), when the
stage runs, then load pods owned by the rollout send the traffic and the operator process
holds no connection to any engine; when the operator is killed mid-stage, the load pods
keep measuring and the stage completes on one continuous window; after the verdict the
load pods are gone.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import pytest

from localcluster.handle import LocalCluster
from localcluster.manifests import load_example, merged
from localcluster.operator_process import OperatorProcess
from localcluster.rollouts import Rollout
from localcluster.sockets import tcp_peers
from localcluster.waiting import wait_for
from specdecode.adapters.load.pods import TOKEN_KEY, token_secret_name

pytestmark = pytest.mark.e2e

LOAD_ROLE = "shadow-load"
STAGE = {
    "name": "steady",
    "concurrency": 8,
    "warmupSeconds": 15,
    "minDurationSeconds": 45,
    "maxDurationSeconds": 150,
    "gates": [
        {"name": "errors", "type": "ErrorRate", "maxErrorRate": 0.05},
        {
            "name": "p99",
            "type": "TailLatency",
            "itlDefinition": "PerChunk",
            "tolerance": 0.5,
            "dryRun": True,
        },
    ],
}


def realtime_rollout() -> dict[str, Any]:
    """The simulator example on one L40S per engine, real time, one automated stage."""
    rollout: dict[str, Any] = merged(
        load_example(),
        {
            "spec": {
                "gpuPool": {"gpuProduct": "NVIDIA-L40S"},
                "engine": {"env": [{"name": "SPECDECODE_SIM_GPU", "value": "L40S"}]},
                "analysis": {"intervalSeconds": 3, "stages": [STAGE]},
            }
        },
    )
    return rollout


def load_pods(r: Rollout) -> list[dict[str, Any]]:
    return r.pods(LOAD_ROLE)


def load_token(cluster: LocalCluster, r: Rollout) -> str:
    """The rollout's load-pod token (its Secret): the load pods answer nobody else."""
    secret = json.loads(
        cluster.kubectl(
            "get", "secret", token_secret_name(r.name), "-n", r.namespace, "-o", "json",
            check=True,
        ).stdout
    )  # fmt: skip
    return base64.b64decode(secret["data"][TOKEN_KEY]).decode()


def report(pod: dict[str, Any], since: float, token: str) -> dict[str, Any]:
    url = f"http://{pod['status']['podIP']}:8090/v1/report?since={since}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=5) as reply:
        data: dict[str, Any] = json.loads(reply.read())
        return data


def window_requests(reports: list[dict[str, Any]]) -> int:
    return sum(b["requestsOk"] for r in reports for b in r["blocks"])


def stage_status(status: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in status["stages"] if s["name"] == "steady")


def test_load_runs_in_owned_pods_survives_an_operator_kill_and_is_cleaned_up(
    rollout: Callable[[str], Rollout], running_operator: OperatorProcess, cluster: LocalCluster
) -> None:
    r = rollout("llama")
    r.apply(realtime_rollout())
    measuring = r.wait(
        lambda s: (
            s
            if s.get("currentStage") == "steady"
            and (stage_status(s).get("load") or {}).get("requests", 0) > 0
            else None
        ),
        timeout=240,
        message="the stage measuring, with load results in status",
    )
    uid = r.get()["metadata"]["uid"]
    pods = load_pods(r)
    assert {p["metadata"]["labels"]["specdecode.io/side"] for p in pods} == {
        "baseline",
        "candidate",
    }
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == uid for p in pods)
    assert all(p["spec"]["automountServiceAccountToken"] is False for p in pods)

    # The operator never talks to an engine: its sockets, sampled through several looks
    # while the load pods stream to the engines. The API server's watch connection must be
    # seen, or the sampling saw nothing at all.
    engines = {
        (p["status"]["podIP"], 8000)
        for role in ("production", "baseline", "candidate")
        for p in r.pods(role)
    }
    apiserver = urlsplit(cluster.apiserver_url)
    assert running_operator.child is not None
    pid = running_operator.child.pid
    peers: set[tuple[str, int]] = set()
    looks_before = stage_status(r.status())["gates"][0].get("measuredAt")

    def sampled_through_a_look() -> bool:
        peers.update(tcp_peers(pid))
        return bool(stage_status(r.status())["gates"][0].get("measuredAt") != looks_before)

    wait_for(sampled_through_a_look, timeout=30, interval=0.05, message="a look while sampling")
    assert (apiserver.hostname, apiserver.port) in peers, peers
    assert not peers & engines, f"operator connected to engines: {peers & engines}"

    # Kill the operator: the load keeps measuring on its own.
    stage_before = stage_status(measuring)
    since = datetime.fromisoformat(stage_before["measureFrom"].replace("Z", "+00:00"))
    since_unix = since.timestamp()
    token = load_token(cluster, r)
    running_operator.kill()
    counted_at_kill = window_requests([report(p, since_unix, token) for p in pods])
    wait_for(
        lambda: (
            window_requests([report(p, since_unix, token) for p in pods]) > counted_at_kill + 20
        ),
        timeout=60,
        message="load pods measuring while the operator is down",
    )
    counted_before_restart = window_requests([report(p, since_unix, token) for p in pods])
    running_operator.start()

    status = r.wait_phase(("Promoted", "RolledBack", "Failed"), timeout=300)
    assert status["phase"] == "Promoted", r.describe()
    stage = stage_status(status)
    # One continuous window: the same stage run, no gap, and every request measured while
    # the operator was away is in the final look.
    assert stage["startedAt"] == stage_before["startedAt"]
    assert stage["measureFrom"] == stage_before["measureFrom"]
    assert stage["load"]["notes"] == [], stage["load"]
    errors = next(g for g in stage["gates"] if g["name"] == "errors")
    assert errors["samples"] >= counted_before_restart // 2  # the candidate side's share
    assert r.event_reasons().count("AnalysisStarted") == 1, r.describe()
    wait_for(lambda: not load_pods(r), timeout=60, message="load pods deleted after the verdict")
