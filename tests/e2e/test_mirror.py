"""Mirror traffic end to end: live requests through a real HTTPRoute, copied to the shadows.

Given the Gateway API CRDs (v1.4.0, from the Go module proxy) in the local cluster, a user's
HTTPRoute in front of the rollout's production Service, and a gateway process that honours
it (`localcluster.gateway`), when a Mirror rollout runs, then the operator adds exactly two
RequestMirror filters toward its shadow Services while a stage runs, repairs them when
they are edited away, judges acceptance and server-side step ITL on the mirrored requests
(never promoting on acceptance alone), and leaves the route as the user wrote it once the
analysis ends or the rollout is deleted.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from localcluster.faults import FAULTS, SLOW_START, inject, where_the_fault_is
from localcluster.gateway_process import running_gateway
from localcluster.handle import LocalCluster
from localcluster.live_traffic import LiveTraffic, live_users
from localcluster.mirror_scenario import (
    ROUTE,
    USERS_FILTER,
    mirror_rollout,
    mirror_targets,
    route_filters,
    route_manifest,
)
from localcluster.rollouts import Rollout
from localcluster.waiting import wait_for

pytestmark = pytest.mark.e2e

TERMINAL = ("Promoted", "RolledBack", "Failed")


def apply_route(cluster: LocalCluster, namespace: str, production_service: str) -> None:
    manifest = route_manifest(namespace, production_service)
    result = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))
    assert result.returncode == 0, result.stderr


def wait_for_filters(
    cluster: LocalCluster, namespace: str, expected: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]] | None:
        filters = route_filters(cluster, namespace)
        return filters if expected(filters) else None

    found: list[dict[str, Any]] = wait_for(check, timeout=60, message="route filters")
    return found


def gate(status: dict[str, Any], stage_name: str, gate_name: str) -> dict[str, Any]:
    stage_status = next(s for s in status["stages"] if s["name"] == stage_name)
    return next(g for g in stage_status["gates"] if g["name"] == gate_name)


def test_mirrored_live_traffic_is_judged_and_the_route_is_given_back(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    apply_route(cluster, r.namespace, r.name)
    shadows = {f"{r.name}-baseline": 50, f"{r.name}-candidate": 50}
    with running_gateway(cluster, r.namespace, ROUTE) as gateway:
        r.apply(mirror_rollout())
        with live_users(gateway.url, "llama-3.1-8b-instruct", concurrency=8) as users:
            during = wait_for_filters(cluster, r.namespace, lambda f: mirror_targets(f) == shadows)
            assert during[0] == USERS_FILTER  # the user's filter stays first and unchanged
            # A hand edit (or a GitOps sync) drops our filters: the next reconcile repairs.
            # The edit must have landed (the route as stored by it has only the user's
            # filter), or the "repair" below would be the untouched route.
            patch = [{"op": "replace", "path": "/spec/rules/0/filters", "value": [USERS_FILTER]}]
            edited = cluster.kubectl(
                "patch", "httproute", ROUTE, "-n", r.namespace, "--type=json",
                "-p", json.dumps(patch), "-o", "json",
            )  # fmt: skip
            assert edited.returncode == 0, edited.stderr
            stored = json.loads(edited.stdout)["spec"]["rules"][0].get("filters", [])
            assert stored == [USERS_FILTER], stored
            wait_for_filters(cluster, r.namespace, lambda f: mirror_targets(f) == shadows)
            status = r.wait_phase(TERMINAL, timeout=420)
        assert users.ok > 0
        mirrored = gateway.stats()
    # Alpha passed, but alpha alone never promotes: the enforced latency gate, judged from
    # vLLM's step histograms of both engines, cannot show that the candidate's P99 step is
    # no slower (its bucket edges are 1.25-2.5x apart), so the rollout is rolled back.
    assert status["phase"] == "RolledBack", r.describe()
    # alpha bounded with no assumed correlation: each request all-or-nothing, drafts per
    # request bounded by vLLM's generation-token histogram (issue 33)
    alpha = gate(status, "acceptance", "alpha")
    assert alpha["verdict"] == "Successful" and alpha["lowerBound"] >= 0.2, alpha
    assert "all-or-nothing requests" in alpha["reason"], alpha
    step_itl = gate(status, "tail-latency", "p99-step-itl")
    assert step_itl["itlDefinition"] == "ServerStep" and step_itl["dryRun"] is False
    assert step_itl["verdict"] != "Successful", step_itl
    assert step_itl["samples"] > 0 and "steps" in step_itl["reason"], step_itl
    assert "p99-step-itl" in status["message"], status["message"]
    for shadow in shadows:  # the gateway really sent copies to both shadow Services
        assert mirrored["mirrors"][f"{r.namespace}/{shadow}:8000"]["sent"] > 0, mirrored
    # Rolled back: our filters are gone, the user's is exactly as written.
    assert wait_for_filters(cluster, r.namespace, lambda f: f == [USERS_FILTER])


def test_a_candidate_failing_mirrored_requests_is_rolled_back_by_error_rate(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    """Issue 33: under Mirror no response reaches the operator, yet a candidate failing
    10 % of its mirrored requests is Failed by ErrorRate, read from vLLM's
    vllm:request_success_total{finished_reason="error"} of both engines."""
    r = rollout("llama")
    apply_route(cluster, r.namespace, r.name)
    manifest = mirror_rollout(percent=100)
    analysis = manifest["spec"]["analysis"]
    first = analysis["stages"][0]
    first["maxDurationSeconds"] = 300
    first["gates"].append({"name": "error-rate", "type": "ErrorRate"})
    analysis["progressDeadlineSeconds"] = 400
    manifest["spec"]["engine"]["env"] = [*manifest["spec"]["engine"]["env"], *SLOW_START]
    with running_gateway(cluster, r.namespace, ROUTE) as gateway:
        r.apply(manifest)
        inject(cluster, r, FAULTS["errors"])
        with live_users(gateway.url, "llama-3.1-8b-instruct", concurrency=8):
            r.wait(lambda s: s.get("phase") in ("Analyzing", *TERMINAL), timeout=300)
            # the candidate alone carries the fault (checked while its pods exist)
            assert where_the_fault_is(r, FAULTS["errors"]) == {
                "candidate deployment": True,
                "candidate pods": True,
                "baseline pods": False,
            }
            status = r.wait_phase(TERMINAL, timeout=600)
    assert status["phase"] == "RolledBack", r.describe()
    errors = gate(status, "acceptance", "error-rate")
    print("error-rate:", errors["reason"])
    assert errors["verdict"] == "Failed", errors
    assert "mirrored requests (engine counts)" in errors["reason"], errors
    assert errors["lowerBound"] > 0.02, errors
    assert "error-rate" in status["message"], status["message"]


def test_deleting_a_mirror_rollout_mid_analysis_removes_its_filters(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    apply_route(cluster, r.namespace, r.name)
    r.apply(mirror_rollout(percent=10))
    wait_for_filters(cluster, r.namespace, lambda f: len(mirror_targets(f)) == 2)
    assert r.get()["metadata"].get("finalizers"), "kopf's finalizer holds the deletion"
    deleted = cluster.kubectl("delete", "sdr", r.name, "-n", r.namespace, "--wait=true")
    assert deleted.returncode == 0, deleted.stderr
    assert route_filters(cluster, r.namespace) == [USERS_FILTER]


def test_a_route_that_does_not_exist_fails_the_rollout_naming_it(
    rollout: Callable[[str], Rollout],
) -> None:
    r = rollout("llama")
    r.apply(mirror_rollout(route="no-such-route"))
    status = r.wait_phase(TERMINAL, timeout=120)
    assert status["phase"] == "Failed", r.describe()
    degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "TrafficSourceInvalid"
    assert "HTTPRoute no-such-route does not exist" in status["message"]


def splitter_url(r: Rollout) -> str | None:
    """The splitter pod's mirror port (its Service's one endpoint), once it has an address."""
    pods = [p for p in r.pods("shadow-splitter") if (p.get("status") or {}).get("podIP")]
    return f"http://{pods[0]['status']['podIP']}:8080" if pods else None


def fed_splitter_rollout(
    gate: dict[str, Any], max_seconds: int = 300, splitter: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A Splitter-paired Mirror rollout with no route (the test feeds the splitter) and
    `gate` added to its first stage, which may run `max_seconds`; the candidate starts
    slowly, so a fault injected on its Deployment lands before its first pod is ready."""
    manifest = mirror_rollout(route=None, pairing="Splitter")
    analysis = manifest["spec"]["analysis"]
    first = analysis["stages"][0]
    first["maxDurationSeconds"] = max_seconds
    first["gates"].append(gate)
    analysis["progressDeadlineSeconds"] = max_seconds + 100
    if splitter is not None:
        analysis["traffic"]["splitter"] = splitter
    manifest["spec"]["engine"]["env"] = [*manifest["spec"]["engine"]["env"], *SLOW_START]
    return manifest


def fed_splitter_verdict(r: Rollout, users: int = 8) -> tuple[dict[str, Any], LiveTraffic]:
    """Post live users' requests straight to the rollout's splitter until a verdict (no
    gateway: a mesh mirror or a tee would post the same), or until it would promote
    (Paused or Promoting count as a verdict here); the final status, the users."""
    url = r.wait(lambda _: splitter_url(r), timeout=300, message="the splitter's address")
    assert "splitter" in r.deployments().get("shadow-splitter", {}).get("metadata", {})["name"]
    started = time.monotonic()
    decided = (*TERMINAL, "Paused", "Promoting")
    with live_users(url, "llama-3.1-8b-instruct", concurrency=users) as traffic:
        status: dict[str, Any] = r.wait(
            lambda s: s if s.get("phase") in decided else None, timeout=600, message="a verdict"
        )
    print(f"{r.name}: {status['phase']} {time.monotonic() - started:.0f}s after the splitter ran")
    print("message:", status.get("message"))
    assert traffic.accepted > 0 and traffic.ok == 0, traffic  # 202s: the mirror is never held
    return status, traffic


def test_the_splitter_fed_directly_rolls_back_a_candidate_failing_requests(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    """Issue 34: Mirror traffic through the splitter, fed without any gateway (a mesh
    mirror or a tee would post the same), gives a verdict on client-side paired evidence:
    a candidate failing 10 % of its requests is RolledBack by ErrorRate, counted by the
    splitter per request (not the engines' counters), and the stage says so."""
    r = rollout("llama")
    r.apply(fed_splitter_rollout({"name": "error-rate", "type": "ErrorRate"}))
    inject(cluster, r, FAULTS["errors"])
    status, _ = fed_splitter_verdict(r)
    assert status["phase"] == "RolledBack", r.describe()
    stage = next(s for s in status["stages"] if s["name"] == "acceptance")
    assert stage["evidence"] == "ClientSidePaired", stage
    errors = gate(status, "acceptance", "error-rate")
    print("error-rate:", errors["reason"])
    assert errors["verdict"] == "Failed", errors
    assert "engine counts" not in errors["reason"], errors  # the splitter's own count
    assert errors["lowerBound"] > 0.02, errors
    # the analysis over: the splitter is gone with it
    r.wait(lambda _: not r.pods("shadow-splitter") or None, timeout=120, message="no splitter")


# The splitter stamps every chunk on one event loop; its P99 delay must stay under 5 % of
# the ~30 ms being judged (~1.5 ms). Beside the other worker's verdict window it reached
# 1.65-3.01 ms and every look was Inconclusive (CI of stop 47, a rehearsal of session 24):
# CPU-bound timing, so `make test` runs it alone.
@pytest.mark.cpu_exclusive
def test_a_mirrored_candidate_with_tail_stalls_is_rolled_back_by_the_per_chunk_tail_gate(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    """Issue 34: 0.1 s stalls on 2 % of the candidate's steps (the Prompts verdict tests'
    fault) leave acceptance alone; on mirrored requests paired and timed per chunk by the
    splitter, the candidate's P99 chunk gap is past 1.4x the baseline's and the per-chunk
    TailLatency gate fails: RolledBack by it, on client-side paired evidence."""
    r = rollout("llama")
    tail = {"name": "p99-itl", "type": "TailLatency", "itlDefinition": "PerChunk"}
    r.apply(fed_splitter_rollout({**tail, "tolerance": 0.4}))
    inject(cluster, r, FAULTS["stalls"])
    status, _ = fed_splitter_verdict(r)
    assert status["phase"] == "RolledBack", r.describe()
    stage = next(s for s in status["stages"] if s["name"] == "acceptance")
    assert stage["evidence"] == "ClientSidePaired", stage
    failed = [g["name"] for g in stage["gates"] if g["verdict"] == "Failed"]
    assert failed == ["p99-itl"], stage["gates"]
    p99 = gate(status, "acceptance", "p99-itl")
    print("p99-itl:", p99["reason"])
    assert p99["type"] == "TailLatency" and p99["itlDefinition"] == "PerChunk", p99
    assert p99["threshold"] == pytest.approx(1.4) and p99["lowerBound"] > 1.4, p99
    assert "acceptance/p99-itl" in status["message"], status["message"]


def test_an_overloaded_splitter_sheds_says_so_and_never_passes_the_look(
    rollout: Callable[[str], Rollout],
) -> None:
    """Issue 34: a splitter capped at 4 mirrored requests in flight, fed by 16 users (a
    few dozen wanted in flight), sheds most of what it is sent. It reports the sheds (both
    sides' arrivals not sent), the tail gate's looks are refused naming the shed share and
    what to change, and the stage ends Inconclusive: RolledBack,
    never Promoted, and the Event says why."""
    r = rollout("llama")
    tail = {"name": "p99-itl", "type": "TailLatency", "itlDefinition": "PerChunk"}
    r.apply(fed_splitter_rollout(tail, max_seconds=30, splitter={"maxInFlight": 4}))
    status, traffic = fed_splitter_verdict(r, users=16)
    assert status["phase"] == "RolledBack" and status["reason"] == "Inconclusive", r.describe()
    stage = next(s for s in status["stages"] if s["name"] == "acceptance")
    assert stage["phase"] == "Inconclusive" and stage["evidence"] == "ClientSidePaired", stage
    p99 = gate(status, "acceptance", "p99-itl")
    print("p99-itl:", p99["reason"])
    assert p99["verdict"] == "Inconclusive", p99
    shed = re.search(r"lost (\d+) of (\d+) mirrored requests", p99["reason"])
    assert shed is not None, p99["reason"]
    lost, offered = int(shed.group(1)), int(shed.group(2))
    assert lost > 0.01 * offered and offered <= traffic.accepted, (lost, offered, traffic)
    for words in ("at its cap of 4 in flight", "maxShedFraction", "maxInFlight", "mirrorPercent"):
        assert words in p99["reason"], p99["reason"]
    assert "splitter sheds" in status["message"], status["message"]
    rolled_back = [e for e in r.events() if e.get("reason") == "Inconclusive"]
    assert rolled_back and "splitter sheds" in rolled_back[-1]["message"], rolled_back
