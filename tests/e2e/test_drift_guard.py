"""Issue 26 item 3, end to end: a promoted config keeps being judged (the drift guard).

Given a rollout promoted on the simulator with a fast guard (a look every 5 s, windows of
50 s) and live users streaming to production, when production's acceptance collapses
(its pods' forced SPECDECODE_SIM_ACCEPTANCE changed through `spec.engine.env`, which
re-renders production without a new analysis), then the rollout says Drifted (condition
and one Warning Event) within about two windows; switched to `onDrift: Rollback`,
production returns to the config stable before the promotion (plain decoding). Before the
change, the steady promoted rollout is looked at every 5 s and the operator writes nothing
(API server audit log). The chart's alerts are evaluated throughout, with this operator
scraped as the chart's ServiceMonitor would have it (job specdecode-operator):
SpecDecodeDrifted fires for the rollout once it drifts, and SpecDecodeOperatorDown, quiet
while the operator runs, fires once it is stopped (it is then started again).
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from localcluster import alerts, prometheus
from localcluster.handle import LocalCluster
from localcluster.live_traffic import live_users
from localcluster.manifests import load_example, merged
from localcluster.operator_process import OperatorProcess
from localcluster.rollouts import Rollout, engine_cmdline, speculative_arg
from localcluster.waiting import wait_for

pytestmark = pytest.mark.e2e

MODEL = "llama-3.1-8b-instruct"
GUARD = {"intervalSeconds": 5, "windowSeconds": 50}
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def manifest(acceptance: float, on_drift: str = "Alert") -> dict[str, Any]:
    """The simulator example, manual gate, production's acceptance forced, a fast guard."""
    env = [
        {"name": "SPECDECODE_SIM_GPU", "value": "L40S"},
        {"name": "SPECDECODE_SIM_ACCEPTANCE", "value": str(acceptance)},
    ]
    patch = {
        "spec": {
            "analysis": {"manual": True, "progressDeadlineSeconds": 120},
            "engine": {"env": env},
            "guard": {**GUARD, "onDrift": on_drift},
        }
    }
    document: dict[str, Any] = merged(load_example(), patch)
    return document


def ready_production(r: Rollout, acceptance: float) -> dict[str, Any] | None:
    """Production's single pod, Ready and rendered with this acceptance."""
    pods = r.pods("production")
    if len(pods) != 1 or pods[0]["metadata"].get("deletionTimestamp"):
        return None
    pod = pods[0]
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}
    ready = any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", [])
    )
    return pod if ready and env.get("SPECDECODE_SIM_ACCEPTANCE") == str(acceptance) else None


def production_alpha(operator: OperatorProcess, namespace: str, name: str) -> float | None:
    """The guard's latest look at production's alpha (`specdecode_production_alpha`)."""
    pattern = re.compile(
        r'^specdecode_production_alpha\{(?=[^}]*bound="value")(?=[^}]*namespace="'
        + re.escape(namespace)
        + r'")(?=[^}]*rollout="'
        + re.escape(name)
        + r'")[^}]*\} (\S+)$',
        re.MULTILINE,
    )
    found = pattern.search(operator.metrics_text())
    return float(found.group(1)) if found else None


def reconciles(operator: OperatorProcess) -> float:
    """Reconciles the operator finished without error so far."""
    found = re.search(
        r'^specdecode_operator_reconcile_duration_seconds_count\{outcome="ok"\} (\S+)$',
        operator.metrics_text(),
        re.MULTILINE,
    )
    return float(found.group(1)) if found else 0.0


def writes_in(cluster: LocalCluster, offset: int, namespace: str) -> list[tuple[str, str, str]]:
    """Writes by the operator's user (the admin kubeconfig) to objects in `namespace`."""
    with cluster.audit_log.open("rb") as log:
        log.seek(offset)
        events = [json.loads(line) for line in log.read().splitlines() if line.strip()]
    return [
        (e["verb"], e["objectRef"].get("resource", ""), e["objectRef"].get("name", ""))
        for e in events
        if e.get("verb") in WRITES
        and e.get("user", {}).get("username") == "admin"
        and e.get("objectRef", {}).get("namespace") == namespace
    ]


@pytest.fixture
def chart_alerts(cluster: LocalCluster, running_operator: OperatorProcess) -> Iterator[None]:
    """The chart's alerts evaluated (operator down after 2 s) and this operator scraped."""
    address = f"127.0.0.1:{running_operator.metrics_port}"
    with (
        alerts.chart_rules(cluster, "drift", "--set=monitoring.prometheusRule.operatorDownFor=2s"),
        prometheus.scraped(
            cluster.paths, cluster.prometheus_url, address, {"job": "specdecode-operator"}
        ),
    ):
        yield


def drifted(r: Rollout) -> dict[str, Any] | None:
    status = r.status()
    found = next((c for c in status.get("conditions", []) if c["type"] == "Drifted"), None)
    return found if found and found["status"] == "True" else None


def test_a_promoted_config_is_judged_drifts_are_reported_and_rolled_back(
    rollout: Callable[[str], Rollout],
    cluster: LocalCluster,
    namespace: str,
    running_operator: OperatorProcess,
    chart_alerts: None,
) -> None:
    r = rollout("guarded")
    r.apply(manifest(0.8))
    r.wait_phase("Analyzing", timeout=180)
    r.annotate("promote")
    r.wait_phase("Promoted", timeout=180)
    pod = wait_for(lambda: ready_production(r, 0.8), timeout=120, message="production ready")
    eagle = speculative_arg(engine_cmdline(cluster, pod))
    assert eagle is not None and eagle["method"] == "eagle3"

    with live_users(f"http://{pod['status']['podIP']}:8000", MODEL, concurrency=4) as users:
        # Steady: the guard looks every 5 s and finds production healthy (alpha ~0.8).
        wait_for(
            lambda: (production_alpha(running_operator, namespace, "guarded") or 0) > 0.5,
            timeout=120,
            message="the guard's first look with data",
        )
        assert drifted(r) is None
        offset = cluster.audit_log.stat().st_size
        before = reconciles(running_operator)
        started = time.monotonic()
        wait_for(
            lambda: reconciles(running_operator) >= before + 10,
            timeout=90,
            message="ten more reconciles (guard looks)",
        )
        steady_seconds = time.monotonic() - started
        steady_writes = writes_in(cluster, offset, namespace)
        print(f"steady window {steady_seconds:.0f}s: {len(steady_writes)} writes")
        assert steady_writes == [], steady_writes
        operator_up = 'up{job="specdecode-operator"} == 1'
        assert cluster.prometheus_query(operator_up), "the operator is not scraped"
        assert not alerts.firing(cluster, "SpecDecodeOperatorDown")
        assert not alerts.firing(cluster, "SpecDecodeDrifted", namespace=namespace)
        assert users.ok > 0

    # Production's traffic now collapses acceptance: its pods re-rendered, no new analysis.
    r.apply(manifest(0.02))
    changed = time.monotonic()
    pod = wait_for(lambda: ready_production(r, 0.02), timeout=120, message="production re-rendered")
    with live_users(f"http://{pod['status']['podIP']}:8000", MODEL, concurrency=4) as users:
        condition = wait_for(lambda: drifted(r), timeout=180, message="Drifted")
        seconds = time.monotonic() - changed
        print(f"Drifted {seconds:.0f}s after the acceptance change: {condition['message']}")
        status = r.status()
        assert status["phase"] == "Promoted" and status["drift"]["upperBound"] < 0.2
        assert condition["reason"] == "AcceptanceDrifted"
        assert "below minAlpha 0.2" in condition["message"]
        warnings = [e for e in r.events() if e["reason"] == "Drifted"]
        assert len(warnings) == 1 and warnings[0]["type"] == "Warning"
        wait_for(
            functools.partial(
                alerts.firing, cluster, "SpecDecodeDrifted", namespace=namespace, rollout=r.name
            ),
            timeout=30,
            message="SpecDecodeDrifted fired",
        )
        assert status.get("stableSpeculative", {}).get("method") == "eagle3"

        # Escalated: the next look that still finds the drift rolls production back.
        r.apply(manifest(0.02, on_drift="Rollback"))
        rolled = r.wait_phase("RolledBack", timeout=60)
        assert rolled["reason"] == "Drifted" and rolled.get("stableSpeculative") is None
        assert users.ok > 0

    def plain_production() -> dict[str, Any] | None:
        pod = ready_production(r, 0.02)
        return pod if pod and speculative_arg(engine_cmdline(cluster, pod)) is None else None

    wait_for(plain_production, timeout=120, message="production back on plain decoding")
    # RolledBack waits for a spec change: no new analysis of the same spec starts.
    assert r.status()["phase"] == "RolledBack" and set(r.deployments()) == {"production"}

    # On call hears of an operator that stopped (then the next tests get it back).
    running_operator.stop()
    try:
        wait_for(
            functools.partial(alerts.firing, cluster, "SpecDecodeOperatorDown"),
            timeout=30,
            message="SpecDecodeOperatorDown fired",
        )
    finally:
        running_operator.start()
