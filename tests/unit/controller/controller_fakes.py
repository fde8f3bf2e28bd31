"""Fakes for controller tests: an API server that records requests, and the watched cache.

`FakeKube` stands in for `KubeClients`: every call is recorded as (verb, what), so a test
can count the requests a reconcile sends. `FakeCluster` plays the watch: `store` turns a
rendered object into what the API server would hand back (defaults added, quantities
normalised, a Ready status) and puts it into the index the reconciler reads.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import httpx
from kubernetes.client import ApiException

from specdecode.adapters.kube.cache import ClusterView, rollout_key
from specdecode.adapters.kube.client import KubeClients
from specdecode.api import (
    AnalysisSpec,
    EngineSpec,
    ModelSpec,
    SpecDecodeRolloutSpec,
    SpeculativeConfig,
)
from specdecode.reconciler.runtime import Runtime
from specdecode.settings import OperatorSettings

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
NAMESPACE, NAME, UID = "team-a", "llama", "uid-1"
EAGLE3 = SpeculativeConfig(
    method="eagle3", model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", num_speculative_tokens=3
)


def raw_spec(speculative: SpeculativeConfig | None = None) -> dict[str, Any]:
    """A valid spec as the API server stores it (camelCase JSON)."""
    spec = SpecDecodeRolloutSpec(
        model=ModelSpec(name="meta-llama/Llama-3.1-8B-Instruct"),
        engine=EngineSpec(image="vllm/vllm-openai:v0.11.2"),
        speculative=speculative,
        analysis=AnalysisSpec(),
    )
    dumped: dict[str, Any] = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


class FakeClock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.current = T0

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


class OperatorKilled(Exception):
    """The operator process dying at an injected point (SIGKILL, in effect)."""


class _Api:
    def __init__(self, kube: FakeKube, group: str) -> None:
        self._kube, self._group = kube, group

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._kube.handle(f"{self._group}.{method}", args, kwargs)

        return call


class FakeKube:
    """Records every request; answers status patches and Event creates like the server."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.events: dict[str, Any] = {}
        self.resource_version = itertools.count(100)
        self.current_version: str | None = None  # the rollout's version, if the test tracks it
        self.status: dict[str, Any] | None = None  # the last status written
        self.fail_status_with: int | None = None
        self.status_writes_are_noops = False  # the server kept the version (nothing changed)
        # "before": the process dies as it sends the status write (it never lands);
        # "after": it dies as the answer arrives (the write landed, nothing after it ran).
        self.die_at_status_write: str | None = None
        self.apps, self.core = _Api(self, "apps"), _Api(self, "core")
        self.custom, self.discovery = _Api(self, "custom"), _Api(self, "discovery")
        self.api = self.dynamic = None
        # Objects that exist on the server but not in the watched cache: (kind, name) ->
        # their ownerReference uids.
        self.uncached: dict[tuple[str, str], tuple[str, ...]] = {}
        self.secrets: dict[str, Any] = {}  # the load tokens created
        self.config_maps: dict[str, dict[str, str]] = {}  # name -> data (prompt sets)
        self.applied_config_maps: dict[str, dict[str, Any]] = {}  # name -> what was applied

    def as_clients(self) -> KubeClients:
        return cast(KubeClients, self)

    def server_side_apply(
        self, obj: dict[str, Any], field_manager: str, *, force: bool = True
    ) -> None:
        verb = "apply" if force else "apply-unforced"
        self.calls.append((verb, (obj,), {"field_manager": field_manager}))
        if obj["kind"] == "ConfigMap":  # kept, so a read finds it (children: the cache's)
            if not force and (obj["kind"], obj["metadata"]["name"]) in self.uncached:
                raise ApiException(status=409, reason="Conflict")
            self.applied_config_maps[obj["metadata"]["name"]] = obj

    def add_uncached(self, kind: str, name: str, owner_uids: tuple[str, ...] = ()) -> None:
        """An object the watched cache does not show (unlabelled, or not delivered yet)."""
        self.uncached[(kind, name)] = owner_uids

    def handle(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.calls.append((method, args, kwargs))
        if method == "custom.patch_namespaced_custom_object_status":
            return self._patch_status(args[5])
        if method == "core.create_namespaced_event":
            name = args[1].metadata.name
            if name in self.events:
                raise ApiException(status=409, reason="AlreadyExists")
            self.events[name] = args[1]
        if method in ("apps.create_namespaced_deployment", "core.create_namespaced_service"):
            assert kwargs == {"dry_run": "All"}  # children are applied, never created
            kind = "Deployment" if method.startswith("apps") else "Service"
            if (kind, args[1]["metadata"]["name"]) in self.uncached:
                raise ApiException(status=409, reason="AlreadyExists")
            return {}
        if method == "core.create_namespaced_secret":
            if args[1]["metadata"]["name"] in self.secrets:
                raise ApiException(status=409, reason="AlreadyExists")
            self.secrets[args[1]["metadata"]["name"]] = args[1]
            return {}
        if method == "core.read_namespaced_config_map":
            return self._read_config_map(args[0])
        if method == "core.read_namespaced_secret":
            return self._read_secret(args[0])
        if method in ("apps.read_namespaced_deployment", "core.read_namespaced_service"):
            return self._read_uncached(
                "Deployment" if method.startswith("apps") else "Service", args[0]
            )
        if method == "core.delete_namespaced_config_map":
            self.applied_config_maps.pop(args[0], None)
        if method == "core.delete_namespaced_event" and self.events.pop(args[0], None) is None:
            raise ApiException(status=404, reason="NotFound")
        return {}

    def _read_config_map(self, name: str) -> Any:
        """A prompt set the test put, a ConfigMap applied earlier, or one in the way."""
        if name in self.config_maps:
            return SimpleNamespace(data=dict(self.config_maps[name]))
        if name in self.applied_config_maps:
            body = self.applied_config_maps[name]
            refs = [SimpleNamespace(uid=r["uid"]) for r in body["metadata"]["ownerReferences"]]
            metadata = SimpleNamespace(owner_references=refs)
            return SimpleNamespace(data=dict(body["data"]), metadata=metadata)
        if ("ConfigMap", name) in self.uncached:
            return self._read_uncached("ConfigMap", name)
        raise ApiException(status=404, reason="NotFound")

    def _read_secret(self, name: str) -> Any:
        """A Secret created earlier, as the client returns it (data base64-encoded)."""
        if name not in self.secrets:
            raise ApiException(status=404, reason="NotFound")
        body = self.secrets[name]
        data = {k: base64.b64encode(v.encode()).decode() for k, v in body["stringData"].items()}
        refs = [SimpleNamespace(uid=r["uid"]) for r in body["metadata"]["ownerReferences"]]
        return SimpleNamespace(data=data, metadata=SimpleNamespace(owner_references=refs))

    def _read_uncached(self, kind: str, name: str) -> Any:
        if (kind, name) not in self.uncached:
            raise ApiException(status=404, reason="NotFound")
        refs = [SimpleNamespace(uid=uid) for uid in self.uncached[(kind, name)]]
        return SimpleNamespace(metadata=SimpleNamespace(owner_references=refs))

    def _patch_status(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.die_at_status_write == "before":
            raise OperatorKilled("before the status write")
        answer = self._write_status(body)
        if self.die_at_status_write == "after":
            raise OperatorKilled("after the status write landed")
        return answer

    def _write_status(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.fail_status_with is not None:
            raise ApiException(status=self.fail_status_with, reason="injected")
        guard = (body.get("metadata") or {}).get("resourceVersion")
        if self.current_version is not None and guard != self.current_version:
            raise ApiException(status=409, reason="Conflict")
        if self.status_writes_are_noops:
            return {"metadata": {"resourceVersion": guard}}
        self.current_version = str(next(self.resource_version))
        self.status = body["status"]
        return {"metadata": {"resourceVersion": self.current_version}}

    def verbs(self) -> list[str]:
        """What was sent, one short name per request."""
        return [method.split(".")[-1] for method, _, _ in self.calls]

    def applied(self) -> list[dict[str, Any]]:
        """Every object sent by server-side apply (create-only or not)."""
        return [args[0] for method, args, _ in self.calls if "apply" in method]

    def writes(self) -> list[str]:
        """Every request that changes something, with what it sent (reads left out)."""
        return [
            json.dumps([method, _without_times(method, args), kwargs], sort_keys=True, default=repr)
            for method, args, kwargs in self.calls
            if not method.split(".")[-1].startswith(("read_", "list_", "get_"))
        ]

    def event_reasons(self) -> list[str]:
        return [event.reason for event in self.events.values()]


def _without_times(method: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """An Event by its name alone (its timestamps are the wall clock's)."""
    if method == "core.create_namespaced_event":
        return (args[0], args[1].metadata.name)
    return args


class FakeCluster:
    """The watched cache, as kopf's indexes would hold it (dicts of lists)."""

    def __init__(self) -> None:
        self.indexes: dict[str, dict[Any, list[dict[str, Any]]]] = {
            kind: defaultdict(list) for kind in ("deployments", "services", "pods", "routes")
        }
        self.view = ClusterView()
        self.view.attach(**self.indexes)

    def store(self, rendered: dict[str, Any], ready: bool = True) -> dict[str, Any]:
        """Put `rendered` into the cache as the API server would return it."""
        obj = server_copy(rendered, ready)
        kind = {"Deployment": "deployments", "Service": "services"}[obj["kind"]]
        key = rollout_key(obj)
        bucket = self.indexes[kind][key]
        bucket[:] = [o for o in bucket if o["metadata"]["name"] != obj["metadata"]["name"]]
        bucket.append(obj)
        return obj

    def store_all(self, rendered: list[dict[str, Any]]) -> None:
        for obj in rendered:
            self.store(obj)


def server_copy(rendered: dict[str, Any], ready: bool = True) -> dict[str, Any]:
    """What the API server stores for an applied object: defaults, normalised quantities,
    server metadata and, for Deployments, a status."""
    obj = copy.deepcopy(rendered)
    metadata = obj["metadata"]
    metadata.update(uid=f"uid-{metadata['name']}", resourceVersion="7", generation=1)
    if obj["kind"] == "Deployment":
        pod = obj["spec"]["template"]["spec"]
        pod.setdefault("restartPolicy", "Always")
        pod.setdefault("dnsPolicy", "ClusterFirst")
        for container in pod["containers"]:
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            for section in ("limits", "requests"):
                values = container.get("resources", {}).get(section, {})
                for resource, value in values.items():
                    values[resource] = str(value)  # the server keeps quantities as strings
        replicas = obj["spec"]["replicas"]
        obj["status"] = {
            "observedGeneration": 1,
            "replicas": replicas,
            "readyReplicas": replicas if ready else 0,
            "updatedReplicas": replicas,
        }
    else:
        obj["spec"].setdefault("clusterIP", "10.0.0.9")
        obj["spec"].setdefault("sessionAffinity", "None")
    return obj


def make_runtime(
    kube: FakeKube, cluster: FakeCluster, clock: FakeClock | None = None, **settings: Any
) -> Runtime:
    """A Runtime on the fakes, with the production intervals unless overridden."""
    return Runtime(
        settings=OperatorSettings(metrics_port=0, identity="test-replica", **settings),
        kube=kube.as_clients(),
        acceptance=cast(Any, None),  # no stage is measured in these tests
        step_latency=cast(Any, None),
        http=httpx.AsyncClient(),
        clock=clock or FakeClock(),
        cluster=cluster.view,
    )
