"""The tuning runner against a fake API server and cache: what it creates, waits for, fails
on, and does exactly once; the round logic itself is tested in tests/unit/domain."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest
from controller_fakes import FakeClock, FakeCluster, FakeKube, make_runtime
from kubernetes.client import ApiException
from pydantic import ValidationError

from specdecode.adapters.kube.tunings import STARTED_BY, STARTED_BY_PATH
from specdecode.api.tuning import SpecDecodeTuning, SpecDecodeTuningSpec
from specdecode.domain.tuning.progress import Progress, to_json
from specdecode.domain.tuning.run import TuningRun
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.tuning import STATE_KEY, TuningRef, reconcile_tuning
from specdecode.reconciler.tuning_boundary import plan_of

pytestmark = pytest.mark.unit

SPEC: dict[str, Any] = {
    "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
    "engine": {"image": "vllm/vllm-openai:v0.33.0"},
    "traffic": {"builtinWorkload": "code"},
    "searchSpace": {
        "candidates": [
            {"method": "suffix", "num_speculative_tokens": 8},
            {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
        ]
    },
    "concurrencyLadder": [8, 32],
    "trial": {"warmupSeconds": 10, "lookSeconds": 30, "maxSeconds": 90},
    "budget": {"maxParallelTrials": 2},
}
REF = TuningRef("ns", "tune", "uid-tune", 1)


class TuningKube(FakeKube):
    """The fake API server, plus ConfigMaps (server-side applied) and the rollouts it starts."""

    def __init__(self) -> None:
        super().__init__()
        self.config_maps: dict[str, dict[str, Any]] = {}
        self.rollouts_created = 0
        # The annotations of the rollout already there (when rollouts_created starts at 1).
        self.existing_annotations: dict[str, str] = {}

    def server_side_apply(
        self, obj: dict[str, Any], field_manager: str, *, force: bool = True
    ) -> None:
        super().server_side_apply(obj, field_manager, force=force)
        if obj["kind"] == "ConfigMap":
            self.config_maps[obj["metadata"]["name"]] = obj

    def handle(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if method == "core.read_namespaced_config_map":
            self.calls.append((method, args, kwargs))
            stored = self.config_maps.get(args[0])
            if stored is None:
                raise ApiException(status=404, reason="NotFound")
            return SimpleNamespace(data=stored.get("data"), binary_data=stored.get("binaryData"))
        if method == "custom.create_namespaced_custom_object":
            self.calls.append((method, args, kwargs))
            self.rollouts_created += 1
            if self.rollouts_created > 1:
                raise ApiException(status=409, reason="AlreadyExists")
            return {}
        if method == "custom.patch_namespaced_custom_object":
            self.calls.append((method, args, kwargs))
            test = args[5][0]  # like the server: a failed `test` refuses the whole patch
            if test["op"] == "test" and self.existing_annotations.get(STARTED_BY) != test["value"]:
                raise ApiException(status=422, reason="Unprocessable Entity")
            return {}
        if method == "custom.get_namespaced_custom_object":
            self.calls.append((method, args, kwargs))
            return {"metadata": {"annotations": dict(self.existing_annotations)}}
        return super().handle(method, args, kwargs)

    def _write_status(self, body: dict[str, Any]) -> dict[str, Any]:
        self.status = body["status"]  # a tuning's status has one writer: unguarded
        return {"metadata": {"resourceVersion": str(next(self.resource_version))}}

    def state(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.config_maps["tune-report"]["data"][STATE_KEY])
        return document


def setup() -> tuple[TuningKube, FakeCluster, Runtime]:
    kube, cluster = TuningKube(), FakeCluster()
    return kube, cluster, make_runtime(kube, cluster, FakeClock())


def engines_of(kube: TuningKube) -> list[dict[str, Any]]:
    """The trial Deployments and Services the runner applied."""
    return [o for o in kube.applied() if o["kind"] in ("Deployment", "Service")]


def add_pod(cluster: FakeCluster, deployment: dict[str, Any], status: dict[str, Any]) -> None:
    """A pod of `deployment` in the cache, with the given status."""
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    key = (REF.namespace, labels["specdecode.io/rollout"])
    name = f"{deployment['metadata']['name']}-x-y"
    cluster.indexes["pods"][key].append(
        {"metadata": {"name": name, "labels": labels}, "status": status}
    )


def run(runtime: Runtime, spec: dict[str, Any], status: dict[str, Any]) -> float | None:
    return asyncio.run(reconcile_tuning(runtime, REF, spec, status))


def test_a_new_tuning_starts_its_first_round_and_waits_for_the_engines() -> None:
    kube, _, runtime = setup()
    assert run(runtime, SPEC, {}) is None  # engines starting: their readiness is an event
    engines = [o for o in kube.applied() if o["kind"] == "Deployment"]
    assert len(engines) == 4  # two trials (maxParallelTrials) x baseline and candidate
    assert all(e["metadata"]["name"].startswith("tune-t") for e in engines)
    assert all(e["metadata"]["ownerReferences"][0]["kind"] == "SpecDecodeTuning" for e in engines)
    assert kube.status is not None and kube.status["phase"] == "Running"
    assert "waiting for the engines" in kube.status["message"]
    assert kube.state()["rounds"] == 1 and len(kube.state()["round"]) == 2
    assert kube.event_reasons() == ["TuningRunning"]


def test_ready_engines_start_the_load_and_the_next_wake_is_the_look() -> None:
    kube, cluster, runtime = setup()
    run(runtime, SPEC, {})
    cluster.store_all(engines_of(kube))
    wake = run(runtime, SPEC, dict(kube.status or {}))
    assert wake == pytest.approx(40.0)  # 10 s warm-up + a 30 s look from now
    pods = [args[1] for method, args, _ in kube.calls if method == "core.create_namespaced_pod"]
    assert len(pods) == 4  # one load pod per side per trial
    assert {p["metadata"]["labels"]["specdecode.io/rollout"] for p in pods} <= {
        e["metadata"]["name"].rsplit("-", 1)[0] for e in engines_of(kube)
    }


def test_a_crash_looping_engine_fails_the_tuning_and_removes_every_trial() -> None:
    kube, cluster, runtime = setup()
    run(runtime, SPEC, {})
    rendered = engines_of(kube)
    cluster.store_all(rendered)
    candidate = next(
        o
        for o in rendered
        if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-candidate")
    )
    crashing = {"reason": "CrashLoopBackOff", "message": "bad head"}
    add_pod(cluster, candidate, {"containerStatuses": [{"state": {"waiting": crashing}}]})
    assert run(runtime, SPEC, dict(kube.status or {})) is None
    assert kube.status is not None and kube.status["phase"] == "Failed"
    assert "candidate engine" in kube.status["message"]
    assert "crash-looping" in kube.status["message"], kube.status["message"]
    deleted = [
        args[0] for method, args, _ in kube.calls if method.endswith("delete_namespaced_deployment")
    ]
    assert len(deleted) == 4
    assert "TuningFailed" in kube.event_reasons()


def test_a_finished_tuning_starts_the_winners_rollout_once() -> None:
    kube, _, runtime = setup()
    spec = {**SPEC, "apply": True}
    progress = Progress(TuningRun.start(plan_of(SpecDecodeTuningSpec.model_validate(spec))))
    progress.finished_at, progress.generation = 1.0, REF.generation
    kube.config_maps["tune-report"] = {"data": {STATE_KEY: to_json(progress)}}
    status = {"phase": "Running", "observedGeneration": 1}
    run(runtime, spec, status)
    assert kube.status is not None and kube.status["phase"] == "Succeeded"
    assert "SpecDecodeRollout tune created" in kube.status["message"]
    run(runtime, spec, status)  # a stale copy (still Running) reconciled again
    assert kube.rollouts_created == 1
    run(runtime, spec, dict(kube.status))  # finished and seen: nothing more is sent
    assert kube.rollouts_created == 1


def test_an_unschedulable_engine_is_waited_for_not_failed() -> None:
    kube, cluster, runtime = setup()
    run(runtime, SPEC, {})
    rendered = engines_of(kube)
    for obj in rendered:
        cluster.store(obj, ready=False)
    baseline = next(
        o
        for o in rendered
        if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-baseline")
    )
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
    }
    add_pod(cluster, baseline, {"conditions": [unschedulable]})
    run(runtime, SPEC, dict(kube.status or {}))
    assert kube.status is not None and kube.status["phase"] == "Running"
    assert "Insufficient nvidia.com/gpu" in kube.status["message"]


def finished_with_apply(kube: TuningKube) -> dict[str, Any]:
    """A tuning spec with `apply: true` whose stored progress says the run is done."""
    spec = {**SPEC, "apply": True}
    progress = Progress(TuningRun.start(plan_of(SpecDecodeTuningSpec.model_validate(spec))))
    progress.finished_at, progress.generation = 1.0, REF.generation
    kube.config_maps["tune-report"] = {"data": {STATE_KEY: to_json(progress)}}
    return spec


def test_apply_creates_the_rollout_marked_as_started_by_this_tuning() -> None:
    kube, _, runtime = setup()
    run(runtime, finished_with_apply(kube), {"phase": "Running", "observedGeneration": 1})
    ((_, args, _),) = [c for c in kube.calls if c[0] == "custom.create_namespaced_custom_object"]
    assert args[4]["metadata"]["annotations"] == {STARTED_BY: REF.owner.uid}
    assert kube.status is not None and "created with the winner" in kube.status["message"]


def test_apply_never_edits_a_rollout_this_tuning_did_not_start() -> None:
    """A user's rollout of the tuning's name (or another tuning's) is left as it is."""
    for found in ({}, {STARTED_BY: "another-tunings-uid"}):
        kube, _, runtime = setup()
        kube.rollouts_created = 1  # a rollout of that name exists: create gets 409
        kube.existing_annotations = found
        run(runtime, finished_with_apply(kube), {"phase": "Running", "observedGeneration": 1})
        (patch,) = [c for c in kube.calls if c[0] == "custom.patch_namespaced_custom_object"]
        assert patch[1][5][0] == {"op": "test", "path": STARTED_BY_PATH, "value": REF.owner.uid}
        assert kube.status is not None
        assert "this tuning did not start it: left as it is" in kube.status["message"]
        assert kube.state()["applied"] == "left alone"


def test_apply_replaces_the_speculative_config_of_an_existing_rollout_whole() -> None:
    """A merge patch would keep keys of the old config the winner lacks."""
    kube, _, runtime = setup()
    kube.rollouts_created = 1  # the rollout this tuning started exists: create gets 409
    kube.existing_annotations = {STARTED_BY: REF.owner.uid}
    spec = {**SPEC, "apply": True}
    progress = Progress(TuningRun.start(plan_of(SpecDecodeTuningSpec.model_validate(spec))))
    progress.finished_at, progress.generation = 1.0, REF.generation
    kube.config_maps["tune-report"] = {"data": {STATE_KEY: to_json(progress)}}
    run(runtime, spec, {"phase": "Running", "observedGeneration": 1})
    (patch,) = [
        (args, kwargs)
        for method, args, kwargs in kube.calls
        if method == "custom.patch_namespaced_custom_object"
    ]
    args, kwargs = patch
    assert kwargs["_content_type"] == "application/json-patch+json"
    assert args[5][1]["path"] == "/spec/speculative" and args[5][1]["op"] in ("add", "remove")
    assert kube.status is not None and "patched" in kube.status["message"]


def test_a_tuning_name_that_cannot_name_its_trials_is_refused() -> None:
    with pytest.raises(ValidationError, match="DNS-1035"):
        SpecDecodeTuning.model_validate({"metadata": {"name": "8b-code"}, "spec": SPEC})
    SpecDecodeTuning.model_validate({"metadata": {"name": "code-8b"}, "spec": SPEC})
