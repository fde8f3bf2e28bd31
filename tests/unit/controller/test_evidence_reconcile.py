"""The evidence fingerprint through a whole reconcile: the prompt set is read while an
analysis runs, and an edit of it or of the engine image restarts the analysis once.

What an SRE sees: one EvidenceChanged Event naming what changed, the status reason saying
so, the shadows re-rendered with the new engine's label (the restart waits for them, not
for the cached old ones) and the stage's load pods replaced.
"""

from __future__ import annotations

from typing import Any

import pytest
from controller_fakes import (
    EAGLE3,
    NAME,
    NAMESPACE,
    UID,
    FakeCluster,
    FakeKube,
    make_runtime,
    raw_spec,
)

from specdecode.adapters.render import EVIDENCE_LABEL, render_children
from specdecode.api import Phase, SpecDecodeRolloutSpec
from specdecode.domain.decision import Decision
from specdecode.domain.evidence import recorded_parts
from specdecode.reconciler import status_boundary
from specdecode.reconciler.reconcile import RolloutRead, RolloutRef, reconcile
from specdecode.reconciler.runtime import Runtime

pytestmark = pytest.mark.unit

PROMPTS = '{"prompt": "Say hello.", "max_tokens": 16}\n'


def spec_with_prompts(image: str = "vllm/vllm-openai:v0.11.2") -> dict[str, Any]:
    spec = raw_spec(EAGLE3)
    spec["engine"]["image"] = image
    spec["analysis"]["traffic"] = {"configMapRef": {"name": "chat-prompts", "key": "p.jsonl"}}
    return spec


def status_of(decision: Decision) -> dict[str, Any]:
    wire = status_boundary.status_of(decision.status)
    dumped: dict[str, Any] = wire.model_dump(mode="json", by_alias=True)
    return dumped


class Driver:
    """Reconciles one rollout the way kopf would: each from the last written status."""

    def __init__(self) -> None:
        self.kube, self.cluster = FakeKube(), FakeCluster()
        self.kube.config_maps["chat-prompts"] = {"p.jsonl": PROMPTS}
        self.runtime: Runtime = make_runtime(self.kube, self.cluster)
        self.status: dict[str, Any] | None = None

    async def step(self, spec: dict[str, Any], seconds: float = 5) -> Decision:
        self.runtime.clock.advance(seconds)  # type: ignore[attr-defined]
        version = self.kube.current_version or "1"
        ref = RolloutRef(NAMESPACE, NAME, UID, 1, resource_version=version)
        decision = await reconcile(self.runtime, RolloutRead(ref, spec, self.status, {}))
        self.status = status_of(decision)
        return decision

    def store_children(self, spec: dict[str, Any], decision: Decision) -> None:
        parsed = SpecDecodeRolloutSpec.model_validate(spec)
        self.cluster.store_all(render_children(NAME, NAMESPACE, UID, parsed, decision.children))

    def evidence_events(self) -> list[str]:
        return [e.message for e in self.kube.events.values() if e.reason == "EvidenceChanged"]

    def pods_created(self) -> list[str]:
        return [
            args[1]["metadata"]["name"]
            for method, args, _ in self.kube.calls
            if method == "core.create_namespaced_pod"
        ]


async def analysing(driver: Driver, spec: dict[str, Any]) -> Decision:
    first = await driver.step(spec)
    driver.store_children(spec, first)
    second = await driver.step(spec)
    assert second.status.phase is Phase.ANALYZING, second.status.message
    assert "prompts" in (recorded_parts(second.status) or {})
    return second


async def test_an_edit_of_the_prompt_configmap_restarts_the_analysis_once() -> None:
    driver = Driver()
    spec = spec_with_prompts()
    started = await analysing(driver, spec)
    first_pods = driver.pods_created()
    assert first_pods  # the control: the stage's load pods were created
    steady = await driver.step(spec)
    assert driver.evidence_events() == []  # the control: the same content restarts nothing
    assert steady.status.analysis_started_at == started.status.analysis_started_at

    driver.kube.config_maps["chat-prompts"] = {"p.jsonl": PROMPTS.replace("hello", "goodbye")}
    restarted = await driver.step(spec)
    assert driver.evidence_events() == [
        "prompt ConfigMap chat-prompts changed; the analysis restarts on the new evidence"
    ]
    assert restarted.status.reason in ("EvidenceChanged", "ShadowsReady")
    assert restarted.status.analysis_started_at != started.status.analysis_started_at
    new_pods = [name for name in driver.pods_created() if name not in first_pods]
    assert new_pods and not set(new_pods) & set(first_pods)  # new plan hash: new pods
    await driver.step(spec)
    assert len(driver.evidence_events()) == 1  # exactly once


async def test_an_engine_image_edit_restarts_and_waits_for_the_new_shadows() -> None:
    driver = Driver()
    spec = spec_with_prompts()
    await analysing(driver, spec)
    bumped = spec_with_prompts(image="vllm/vllm-openai:v0.11.3")
    restarted = await driver.step(bumped)
    assert [e.reason for e in restarted.events] == ["EvidenceChanged"]
    assert restarted.status.reason == "EvidenceChanged"
    assert restarted.status.message.startswith("engine.image changed")
    # the cache still shows the old shadows ready: the restart waits for the new ones
    assert restarted.status.phase is Phase.DEPLOYING
    labels = {
        obj["metadata"]["name"]: obj["metadata"]["labels"][EVIDENCE_LABEL]
        for obj in driver.kube.applied()
        if obj["kind"] == "Deployment"
    }
    old = driver.cluster.view.rollout_deployments(NAMESPACE, NAME)[0]["metadata"]["labels"]
    assert labels[f"{NAME}-candidate"] != old[EVIDENCE_LABEL]
    waiting = await driver.step(bumped)
    assert waiting.status.phase is Phase.DEPLOYING
    driver.store_children(bumped, waiting)
    ready = await driver.step(bumped)
    assert ready.status.phase is Phase.ANALYZING
    assert len(driver.evidence_events()) == 1
