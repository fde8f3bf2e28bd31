"""The Mirror-traffic scenarios shared by the e2e tests and `make demo SCENARIO=mirror`.

A user's HTTPRoute in front of the rollout's production Service (with a filter of the
user's own, which must survive untouched), and the simulator example switched to Mirror
traffic, two ways:
- `splitter_demo_rollout` (`SCENARIO=mirror`): the Splitter pairing with the Prompts demo's
  own stages and gates (Speedup and per-chunk TailLatency included): the route mirrors to
  the splitter's Service, the splitter sends each request to both shadows and times both
  streams, so the gates judge the same evidence as under Prompts, on live arrivals.
- `mirror_rollout` (`SCENARIO=mirror-serverside` and the e2e tests): server-side gates
  only: acceptance from the candidate's spec-decode counters, an enforced ServerStep
  tail-latency gate from vLLM's step histogram (the CRD refuses a ServerSide analysis
  without one: alpha alone never promotes), and an enforced ErrorRate gate from vLLM's
  request-outcome counters (refused without one too).
"""

from __future__ import annotations

import json
from typing import Any

from localcluster.handle import LocalCluster
from localcluster.manifests import load_example, merged

ROUTE = "llm"
USERS_FILTER = {
    "type": "RequestHeaderModifier",
    "requestHeaderModifier": {"set": [{"name": "x-team", "value": "search"}]},
}
SIM_ENV = [
    {"name": "SPECDECODE_SIM_GPU", "value": "H100"},
    {"name": "SPECDECODE_SIM_ACCEPTANCE", "value": "0.85"},
]


def route_manifest(namespace: str, production_service: str, port: int = 8000) -> dict[str, Any]:
    """An HTTPRoute sending /v1 to the production Service, with a filter of the user's."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": ROUTE, "namespace": namespace},
        "spec": {
            "parentRefs": [{"name": "inference-gateway"}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/v1"}}],
                    "filters": [USERS_FILTER],
                    "backendRefs": [{"name": production_service, "port": port}],
                }
            ],
        },
    }


def route_filters(cluster: LocalCluster, namespace: str) -> list[dict[str, Any]]:
    """The filters of the scenario route's one rule, as the API server has them now."""
    out = cluster.kubectl("get", "httproute", ROUTE, "-n", namespace, "-o", "json")
    assert out.returncode == 0, out.stderr
    filters: list[dict[str, Any]] = json.loads(out.stdout)["spec"]["rules"][0].get("filters", [])
    return filters


def mirror_targets(filters: list[dict[str, Any]]) -> dict[str, int]:
    """backendRef name -> percent of every RequestMirror filter."""
    return {
        f["requestMirror"]["backendRef"]["name"]: f["requestMirror"].get("percent", 100)
        for f in filters
        if f["type"] == "RequestMirror"
    }


def mirror_rollout(
    route: str | None = ROUTE, percent: int = 50, pairing: str = "ServerSide"
) -> dict[str, Any]:
    """The simulator example on Mirror traffic: server-side gates only (`pairing`
    ServerSide), or the same gates judged client-side through the splitter (Splitter;
    `route` None: no gateway, the test feeds the splitter itself)."""
    stage = {"warmupSeconds": 3, "minDurationSeconds": 15, "maxDurationSeconds": 90}
    acceptance = {"name": "alpha", "type": "Acceptance", "minAlpha": 0.2}
    step_itl = {"name": "p99-step-itl", "type": "TailLatency", "tolerance": 0.25}
    # From vLLM's request-outcome counters (the CRD refuses a Mirror analysis without an
    # enforced ErrorRate gate); in the last stage, so the first passes on alpha alone.
    errors = {"name": "error-rate", "type": "ErrorRate"}
    patch = {
        "spec": {
            "engine": {"env": SIM_ENV},
            "analysis": {
                "traffic": {
                    "source": "Mirror",
                    "mirrorPairing": pairing,
                    "httpRoute": route,
                    "mirrorPercent": percent,
                    # below the stages' 15 s minimum (the splitter times its requests out)
                    "requestTimeoutSeconds": 10,
                },
                "intervalSeconds": 3,
                "progressDeadlineSeconds": 180,
                "stages": [
                    {**stage, "name": "acceptance", "gates": [acceptance]},
                    {**stage, "name": "tail-latency", "gates": [step_itl, errors]},
                ],
            },
        }
    }
    rollout: dict[str, Any] = merged(load_example(), patch)
    return rollout


def splitter_demo_rollout(route: str = ROUTE, percent: int = 100) -> dict[str, Any]:
    """The Prompts demo's rollout (examples/simulator) with its stages and gates unchanged,
    on Mirror traffic through the splitter (`percent` of the route's live requests).

    Only the stages' load goes: under Mirror the live users set the arrival process, so a
    stage's `concurrency` would be a number nothing obeys.
    """
    example = load_example()
    stages = [
        {key: value for key, value in stage.items() if key not in ("concurrency", "requestRate")}
        for stage in example["spec"]["analysis"]["stages"]
    ]
    patch = {
        "spec": {
            "analysis": {
                "traffic": {
                    "source": "Mirror",
                    "mirrorPairing": "Splitter",
                    "httpRoute": route,
                    "mirrorPercent": percent,
                },
                "stages": stages,
            }
        }
    }
    rollout: dict[str, Any] = merged(example, patch)
    return rollout
