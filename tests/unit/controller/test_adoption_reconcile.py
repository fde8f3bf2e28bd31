"""A rollout of only `workloadRef` and `speculative`, reconciled against a fake source.

What a team adopting a Deployment cares about: the four lines start an analysis on copies
of the source, with the model, served name, image, release and port read from its vLLM
container and recorded in status; a source that does not state one of them starts
nothing (Pending, Degraded WorkloadUnavailable naming what is missing, one Warning
Event), and a running analysis it breaks ends without a verdict, its shadows removed.
"""

from __future__ import annotations

from typing import Any

import pytest
from controller_fakes import EAGLE3, NAME, NAMESPACE, UID, FakeCluster, FakeKube, make_runtime

from specdecode.api import Phase
from specdecode.domain.decision import Decision
from specdecode.reconciler import status_boundary, workload
from specdecode.reconciler.reconcile import RolloutRead, RolloutRef, reconcile

pytestmark = pytest.mark.unit

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
SERVED = "llama-3.1-8b-instruct"
IMAGE = "vllm/vllm-openai:v0.33.0"
FOUR_LINES = {"workloadRef": {"name": "chat"}, "speculative": EAGLE3.to_wire()}


def source(args: list[str]) -> dict[str, Any]:
    container = {"name": "vllm", "image": IMAGE, "command": ["vllm", "serve"], "args": args}
    return {
        "metadata": {"name": "chat", "generation": 1},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "chat"}},
            "template": {
                "metadata": {"labels": {"app": "chat"}},
                "spec": {"containers": [container]},
            },
        },
        "status": {
            "observedGeneration": 1,
            "replicas": 1,
            "readyReplicas": 1,
            "updatedReplicas": 1,
        },
    }


SERVING = source([MODEL, "--port", "8000", "--served-model-name", SERVED])
NO_MODEL = source(["--port", "8000"])  # `vllm serve` with neither a positional nor --model


def reads(monkeypatch: pytest.MonkeyPatch, deployment: dict[str, Any] | None) -> None:
    services = [{"metadata": {"name": "chat"}, "spec": {"selector": {"app": "chat"}}}]
    monkeypatch.setattr(workload, "read_source", lambda kube, ns, name: (deployment, services))


def ref(version: str = "1") -> RolloutRef:
    return RolloutRef(NAMESPACE, NAME, UID, 1, resource_version=version)


def status_of(decision: Decision) -> dict[str, Any]:
    wire = status_boundary.status_of(decision.status)
    dumped: dict[str, Any] = wire.model_dump(mode="json", by_alias=True)
    return dumped


async def test_four_lines_start_an_analysis_on_copies_with_what_the_source_states(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kube = FakeKube()
    reads(monkeypatch, SERVING)
    decision = await reconcile(
        make_runtime(kube, FakeCluster()), RolloutRead(ref(), FOUR_LINES, None, {})
    )
    assert decision.status.phase is Phase.DEPLOYING
    assert decision.children.shadows
    recorded = decision.status.workload
    assert recorded is not None
    assert (recorded.source, recorded.image, recorded.model) == ("Deployment/chat", IMAGE, MODEL)
    assert (recorded.served_model_name, recorded.vllm_version) == (SERVED, "0.33.0")
    shadows = {o["metadata"]["name"]: o for o in kube.applied() if o["kind"] == "Deployment"}
    assert set(shadows) == {f"{NAME}-baseline", f"{NAME}-candidate"}
    pod = shadows[f"{NAME}-candidate"]["spec"]["template"]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == "8000"  # the port read
    assert pod["spec"]["containers"][0]["image"] == IMAGE


async def test_a_source_without_a_model_starts_nothing_and_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kube = FakeKube()
    reads(monkeypatch, NO_MODEL)
    runtime = make_runtime(kube, FakeCluster())
    decision = await reconcile(runtime, RolloutRead(ref(), FOUR_LINES, None, {}))
    assert decision.status.phase is Phase.PENDING
    assert not decision.children.shadows and decision.traffic is None
    assert decision.status.verdict is None
    degraded = next(c for c in decision.status.conditions if c.type == "Degraded")
    assert (degraded.status.value, degraded.reason) == ("True", "WorkloadUnavailable")
    assert "Deployment/chat" in degraded.message and "the model" in degraded.message
    assert [e.reason for e in decision.events] == ["WorkloadUnavailable"]
    assert decision.events[0].type.value == "Warning"
    assert "no positional after serve, no --model" in decision.events[0].message
    assert kube.applied() == []
    assert decision.status.workload is not None
    assert decision.status.workload.source == "Deployment/chat"
    assert decision.status.workload.model is None  # nothing in force that was not read

    again = await reconcile(
        runtime, RolloutRead(ref(kube.current_version or "1"), FOUR_LINES, status_of(decision), {})
    )
    assert again.events == () and again.status.phase is Phase.PENDING  # one Event per problem


async def test_a_source_losing_its_model_mid_analysis_ends_it_without_a_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kube, cluster = FakeKube(), FakeCluster()
    runtime = make_runtime(kube, cluster)
    reads(monkeypatch, SERVING)
    deploying = await reconcile(runtime, RolloutRead(ref(), FOUR_LINES, None, {}))
    assert deploying.children.shadows
    cluster.store_all([o for o in kube.applied() if o["kind"] in ("Deployment", "Service")])
    kube.calls.clear()
    reads(monkeypatch, NO_MODEL)
    version = kube.current_version or "1"
    stopped = await reconcile(
        runtime, RolloutRead(ref(version), FOUR_LINES, status_of(deploying), {})
    )
    assert stopped.status.phase is Phase.PENDING and stopped.status.verdict is None
    assert stopped.status.candidate_fingerprint is None  # a clean analysis once it is read
    deleted = sorted(args[0] for method, args, _ in kube.calls if ".delete" in method)
    assert deleted == [f"{NAME}-baseline"] * 2 + [f"{NAME}-candidate"] * 2

    reads(monkeypatch, SERVING)
    version = kube.current_version or version
    restarted = await reconcile(
        runtime, RolloutRead(ref(version), FOUR_LINES, status_of(stopped), {})
    )
    assert restarted.children.shadows  # the cache still shows ready shadows: Analyzing at once
    assert restarted.status.phase in (Phase.DEPLOYING, Phase.ANALYZING)
    assert "AnalysisStarted" in [e.reason for e in restarted.events]


async def test_an_absent_source_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    reads(monkeypatch, None)
    decision = await reconcile(
        make_runtime(FakeKube(), FakeCluster()), RolloutRead(ref(), FOUR_LINES, None, {})
    )
    assert decision.status.phase is Phase.PENDING
    assert "Deployment/chat not found" in decision.status.message
