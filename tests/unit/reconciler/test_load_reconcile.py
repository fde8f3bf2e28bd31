"""The operator's side of the load pods, against a fake API server and fake load pods.

sync_load_pods makes the rollout's load pods exactly the stage run's (creating only after
the prompt set parsed, deleting only what exists); read_windows turns the pods' HTTP
reports into one window per side, and a pod that answers garbage into a metric Error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest
import yaml
from kubernetes.client import ApiException

from specdecode.adapters.kube.cache import ClusterView
from specdecode.adapters.load.pods import plan_hash, render_load_pods
from specdecode.adapters.render import Owner
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_report import LoadReport, report_to_wire
from specdecode.domain.load_sizing import LoadShape
from specdecode.domain.observations import ChildRole, LatencyBlock, LatencySamples, MetricError
from specdecode.domain.sketch import Sketch
from specdecode.reconciler.load import observe_load_pods, read_windows, sync_load_pods
from specdecode.reconciler.runtime import Runtime
from specdecode.settings import OperatorSettings

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
SPEC = SpecDecodeRolloutSpec.model_validate(
    yaml.safe_load((REPO / "examples" / "specdecode-rollout.yaml").read_text())["spec"]
)
OWNER = Owner("llama-8b", "team-a", "5f0c6a0e-0000-4000-8000-000000000001")
PLAN = TrafficPlan(
    stage_name="tail-latency",
    candidate_fingerprint="abc",
    concurrency=8,
    request_rate=None,
    started_at=datetime(2026, 1, 1, tzinfo=UTC),
    shape=LoadShape(pods_per_side=1, processes_per_pod=1),
)


class FakeCore:
    """Pods, ConfigMaps and the calls made, as an API server would keep them."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}
        self.config_maps: dict[str, dict[str, str]] = {}
        self.calls: list[str] = []

    def create_namespaced_pod(self, namespace: str, body: dict[str, Any]) -> None:
        self.calls.append(f"create {body['metadata']['name']}")
        self.pods[body["metadata"]["name"]] = body

    def delete_namespaced_pod(self, name: str, namespace: str, **_: Any) -> None:
        self.calls.append(f"delete {name}")
        if self.pods.pop(name, None) is None:
            raise ApiException(status=404)

    def read_namespaced_config_map(self, name: str, namespace: str) -> Any:
        if name not in self.config_maps:
            raise ApiException(status=404)
        return SimpleNamespace(data=self.config_maps[name])


class WatchedPods(Mapping[tuple[str, str], list[dict[str, Any]]]):
    """The operator's pod index as the watch would fill it from the fake API server."""

    def __init__(self, core: FakeCore) -> None:
        self.core = core

    def __getitem__(self, key: tuple[str, str]) -> list[dict[str, Any]]:
        pods = [_running(p) for p in self.core.pods.values()]
        found = [p for p in pods if p["metadata"]["labels"]["specdecode.io/rollout"] == key[1]]
        if not found:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter([("team-a", "llama-8b")] if self.core.pods else [])

    def __len__(self) -> int:
        return 1 if self.core.pods else 0


def _running(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as the kubelet reports it: an address and Ready."""
    labels = manifest["metadata"]["labels"]
    index = int(labels["specdecode.io/shard"])
    ip = f"10.1.{0 if labels['specdecode.io/side'] == 'baseline' else 1}.{index + 1}"
    status = {"podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]}
    return {**manifest, "status": status}


LOOKUPS: list[str] = []


def endpoint_slices(namespace: str, label_selector: str) -> Any:
    LOOKUPS.append(label_selector)
    service = label_selector.split("=")[1]
    ip = "10.2.0.1" if service.endswith("baseline") else "10.2.0.2"
    endpoint = SimpleNamespace(addresses=[ip], conditions=SimpleNamespace(ready=True))
    return SimpleNamespace(
        items=[SimpleNamespace(ports=[SimpleNamespace(port=8000)], endpoints=[endpoint])]
    )


def runtime(core: FakeCore, handler: Any = None) -> Runtime:
    kube = SimpleNamespace(
        core=core, discovery=SimpleNamespace(list_namespaced_endpoint_slice=endpoint_slices)
    )
    transport = httpx.MockTransport(handler or (lambda request: httpx.Response(404)))
    cluster = ClusterView()
    cluster.attach({}, {}, WatchedPods(core), {})
    return Runtime(
        cluster=cluster,
        settings=OperatorSettings(load_image="operator:test"),
        kube=kube,  # type: ignore[arg-type]
        acceptance=None,  # type: ignore[arg-type]
        step_latency=None,  # type: ignore[arg-type]
        http=httpx.AsyncClient(transport=transport),
    )


def with_prompts(name: str) -> SpecDecodeRolloutSpec:
    wire = SPEC.to_wire()
    analysis = dict(cast("dict[str, Any]", wire["analysis"]))
    analysis["traffic"] = {"configMapRef": {"name": name, "key": "p.jsonl"}}
    wire["analysis"] = analysis
    return SpecDecodeRolloutSpec.model_validate(wire)


async def test_sync_creates_the_run_pods_then_deletes_them_when_the_plan_ends() -> None:
    core = FakeCore()
    rt = runtime(core)
    await sync_load_pods(rt, OWNER, SPEC, PLAN, observe_load_pods(rt, "team-a", "llama-8b"))
    assert sorted(core.pods) == sorted(p.name for p in render_load_pods(OWNER, SPEC, PLAN, {}, "x"))
    (pod,) = [
        p
        for p in core.pods.values()
        if p["metadata"]["labels"]["specdecode.io/side"] == "candidate"
    ]
    assert "http://10.2.0.2:8000" in pod["spec"]["containers"][0]["args"]
    core.calls.clear()
    LOOKUPS.clear()
    pods = observe_load_pods(rt, "team-a", "llama-8b")
    await sync_load_pods(rt, OWNER, SPEC, PLAN, pods)
    assert core.calls == []  # converged: no writes
    assert LOOKUPS == []  # endpoints were looked up moments ago: not again every reconcile
    await sync_load_pods(rt, OWNER, SPEC, None, pods)
    assert not core.pods
    core.calls.clear()
    await sync_load_pods(rt, OWNER, SPEC, None, observe_load_pods(rt, "team-a", "llama-8b"))
    assert core.calls == []  # nothing to delete: no DELETE of absent pods


async def test_a_new_stage_run_replaces_the_old_pods() -> None:
    core = FakeCore()
    rt = runtime(core)
    await sync_load_pods(rt, OWNER, SPEC, PLAN, [])
    rerun = TrafficPlan(**{**PLAN.__dict__, "started_at": datetime(2026, 1, 2, tzinfo=UTC)})
    await sync_load_pods(rt, OWNER, SPEC, rerun, observe_load_pods(rt, "team-a", "llama-8b"))
    assert {p["metadata"]["labels"]["specdecode.io/load-plan"] for p in core.pods.values()} == {
        plan_hash(rerun)
    }


async def test_no_pod_is_created_for_a_prompt_set_that_does_not_parse() -> None:
    core = FakeCore()
    core.config_maps["bad"] = {"p.jsonl": '{"prompt": "ok"}\nnot json'}
    rt = runtime(core)
    await sync_load_pods(rt, OWNER, with_prompts("bad"), PLAN, [])
    await sync_load_pods(rt, OWNER, with_prompts("missing"), PLAN, [])
    assert not core.pods
    core.config_maps["good"] = {"p.jsonl": '{"prompt": "ok"}'}
    await sync_load_pods(rt, OWNER, with_prompts("good"), PLAN, [])
    assert len(core.pods) == 2


def _report(side: str) -> dict[str, Any]:
    block = LatencyBlock(start=100.0, seconds=2.0, per_chunk_itl=Sketch.of([0.02] * 50), chunks=50)
    return report_to_wire(LoadReport(side, 0, 1, 0.0, 0, 2.0, 5, 50, False, blocks=(block,)))


async def test_reports_become_one_window_per_side_and_garbage_is_an_error() -> None:
    core = FakeCore()
    seen: list[str] = []

    def pods_answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        side = "baseline" if request.url.host.startswith("10.1.0") else "candidate"
        return httpx.Response(200, content=json.dumps(_report(side)))

    rt = runtime(core, pods_answer)
    await sync_load_pods(rt, OWNER, SPEC, PLAN, [])
    pods = observe_load_pods(rt, "team-a", "llama-8b")
    baseline, candidate = await read_windows(rt, PLAN, pods, since=100.0, now=110.0)
    assert isinstance(baseline, LatencySamples) and isinstance(candidate, LatencySamples)
    assert baseline.per_chunk_itl.total == 50 and candidate.per_chunk_itl.total == 50
    assert all("/v1/report?since=100.000" in url for url in seen) and len(seen) == 2

    broken = runtime(core, lambda request: httpx.Response(200, content=b'{"schema": 1}'))
    baseline, _ = await read_windows(broken, PLAN, pods, since=100.0, now=110.0)
    assert isinstance(baseline, MetricError) and "missing" in baseline.message

    silent = runtime(core, lambda request: httpx.Response(503))
    assert await read_windows(silent, PLAN, pods, 100.0, 110.0) == (None, None)
    assert ChildRole.BASELINE.value == "baseline"
