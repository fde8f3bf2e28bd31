"""Fakes for the operator's side of the load pods: an API server keeping pods, the watched
pod index it fills (with the engine pods, whose addresses a test may move), load pods
answering over a mock transport.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import yaml
from kubernetes.client import ApiException

from specdecode.adapters.kube.cache import ClusterView
from specdecode.adapters.render import Owner
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_report import LoadReport, report_to_wire
from specdecode.domain.load_sizing import LoadShape
from specdecode.domain.observations import LatencyBlock
from specdecode.domain.sketch import Sketch
from specdecode.reconciler.runtime import Runtime
from specdecode.settings import OperatorSettings

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
        self.secrets: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []

    def create_namespaced_pod(self, namespace: str, body: dict[str, Any]) -> None:
        self.calls.append(f"create {body['metadata']['name']}")
        self.pods[body["metadata"]["name"]] = body

    def delete_namespaced_pod(self, name: str, namespace: str, **_: Any) -> None:
        self.calls.append(f"delete {name}")
        if self.pods.pop(name, None) is None:
            raise ApiException(status=404)

    def create_namespaced_secret(self, namespace: str, body: dict[str, Any]) -> None:
        self.calls.append(f"create secret {body['metadata']['name']}")
        if body["metadata"]["name"] in self.secrets:
            raise ApiException(status=409)
        self.secrets[body["metadata"]["name"]] = body

    def read_namespaced_secret(self, name: str, namespace: str) -> Any:
        self.calls.append(f"get secret {name}")
        if name not in self.secrets:
            raise ApiException(status=404)
        body = self.secrets[name]
        data = {k: base64.b64encode(v.encode()).decode() for k, v in body["stringData"].items()}
        refs = [SimpleNamespace(uid=r["uid"]) for r in body["metadata"]["ownerReferences"]]
        return SimpleNamespace(data=data, metadata=SimpleNamespace(owner_references=refs))

    def read_namespaced_config_map(self, name: str, namespace: str) -> Any:
        if name not in self.config_maps:
            raise ApiException(status=404)
        return SimpleNamespace(data=self.config_maps[name])


class WatchedPods(Mapping[tuple[str, str], list[dict[str, Any]]]):
    """The operator's pod index as the watch would fill it from the fake API server."""

    def __init__(self, core: FakeCore) -> None:
        self.core = core

    def __getitem__(self, key: tuple[str, str]) -> list[dict[str, Any]]:
        if key != ("team-a", "llama-8b"):
            raise KeyError(key)
        return [*(_running(p) for p in self.core.pods.values()), *engine_pods()]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter([("team-a", "llama-8b")])

    def __len__(self) -> int:
        return 1


def _running(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as the kubelet reports it: an address and Ready."""
    labels = manifest["metadata"]["labels"]
    index = int(labels["specdecode.io/shard"])
    ip = f"10.1.{0 if labels['specdecode.io/side'] == 'baseline' else 1}.{index + 1}"
    status = {"podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]}
    return {**manifest, "status": status}


# The engines' pod addresses per side; a test may move one (an engine pod restarted).
ENGINE_IPS = {"baseline": "10.2.0.1", "candidate": "10.2.0.2"}


def engine_pods() -> list[dict[str, Any]]:
    """One Ready engine pod per shadow role, as the watch caches it."""
    return [
        {
            "metadata": {
                "name": f"llama-8b-{role}-0",
                "labels": {"specdecode.io/rollout": "llama-8b", "specdecode.io/role": role},
            },
            "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]},
        }
        for role, ip in ENGINE_IPS.items()
    ]


def runtime(core: FakeCore, handler: Any = None) -> Runtime:
    kube = SimpleNamespace(core=core)  # no other API: endpoints come from the cache
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


def report(side: str) -> dict[str, Any]:
    block = LatencyBlock(start=100.0, seconds=2.0, per_chunk_itl=Sketch.of([0.02] * 50), chunks=50)
    return report_to_wire(LoadReport(side, 0, 1, 0.0, 0, 2.0, 5, 50, False, blocks=(block,)))
