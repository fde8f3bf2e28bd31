"""Faults injected into a rollout's candidate engine only, after the operator created it.

The simulator's fault knobs are env vars; `kubectl set env` on the candidate Deployment
sets them under another field manager, and the operator server-side applies only the env
entries it renders, so they survive its next apply. The engines take
SPECDECODE_SIM_STARTUP_SECONDS to become ready, so the injected env lands (and the
Deployment rolls its pod) before the shadows are ready and a stage starts.
"""

from __future__ import annotations

from typing import Any

from localcluster.handle import LocalCluster
from localcluster.rollouts import Rollout
from localcluster.waiting import wait_for

# Long enough for `kubectl set env` to land before the first pod is ready.
SLOW_START = [{"name": "SPECDECODE_SIM_STARTUP_SECONDS", "value": "15"}]
FAULTS = {
    "errors": {"SPECDECODE_SIM_ERROR_RATE": "0.1"},
    "stalls": {
        "SPECDECODE_SIM_LATENCY_SPIKE_PROBABILITY": "0.02",
        "SPECDECODE_SIM_LATENCY_SPIKE_SECONDS": "0.1",
    },
    # a fifth of the streamed requests stop after 1-8 chunks without closing, from 35 s
    # after the engine first holds 16 requests: inside the 32-stream stage's measured window
    # (after its 30 s warm-up), not the 4-stream stage's, so the time from the first hang to
    # the failing look is the gate's, not a warm-up's (hangs during a warm-up are 45 s old,
    # past the request timeout, at the stage's first look with data)
    "hangs": {
        "SPECDECODE_SIM_HANG_RATE": "0.2",
        "SPECDECODE_SIM_HANG_FROM_LOAD": "16",
        "SPECDECODE_SIM_HANG_DELAY_SECONDS": "35",
    },
}


def env_of(obj: dict[str, Any]) -> dict[str, str]:
    """The engine container's env (name -> value) of a Deployment or a Pod."""
    spec = obj["spec"]["template"]["spec"] if obj["kind"] == "Deployment" else obj["spec"]
    engine = spec["containers"][0]
    return {e["name"]: e.get("value", "") for e in engine.get("env", [])}


def inject(cluster: LocalCluster, r: Rollout, fault: dict[str, str]) -> None:
    """Set the fault on the candidate Deployment once the operator has created it."""
    wait_for(lambda: "candidate" in r.deployments(), timeout=120, message="candidate Deployment")
    pairs = [f"{name}={value}" for name, value in fault.items()]
    deployment = f"deployment/{r.name}-candidate"
    cluster.kubectl("set", "env", deployment, "-n", r.namespace, *pairs, check=True)


def carries(r: Rollout, role: str, fault: dict[str, str]) -> bool:
    """Every live pod of the role has the fault's env (and there is one)."""
    pods = r.pods(role)
    return bool(pods) and all(fault.items() <= env_of(pod).items() for pod in pods)


def where_the_fault_is(r: Rollout, fault: dict[str, str]) -> dict[str, bool]:
    """Whether the candidate's Deployment and pods carry the fault, and whether any
    baseline pod does (it must not)."""
    return {
        "candidate deployment": fault.items() <= env_of(r.deployments()["candidate"]).items(),
        "candidate pods": carries(r, "candidate", fault),
        "baseline pods": any(fault.keys() & env_of(pod).keys() for pod in r.pods("baseline")),
    }
