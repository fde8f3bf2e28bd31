"""The reconciler fetches what the stage's gates declare, and nothing else (issue 22).

Counters used to be fetched only when the stage had an Acceptance gate, so a stage judged
by AcceptedLength alone said "no drafts yet" on every look and rolled back by the clock.
Here, through `reconcile` on the controller fakes, such a stage decides both ways, and a
stage that needs no counters or histograms asks neither source.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from controller_fakes import NAMESPACE, FakeClock, FakeCluster, FakeKube, make_runtime
from test_reconcile import http_route, ref, status_of, store_children

from specdecode.adapters.metrics import EngineSelector
from specdecode.api import Phase, SpecDecodeRolloutSpec, SpeculativeConfig, StagePhase
from specdecode.domain.decision import Decision
from specdecode.domain.observations import AcceptanceCounts, MetricError, StepHistogram
from specdecode.reconciler.reconcile import RolloutRead, reconcile
from specdecode.reconciler.runtime import Runtime

pytestmark = pytest.mark.unit

NGRAM = SpeculativeConfig(method="ngram", num_speculative_tokens=4, prompt_lookup_max=4)
STAGE = {"name": "length", "warmupSeconds": 0, "minDurationSeconds": 60}


class CountingSources:
    """Counters at a fixed tokens-per-step, and empty histograms; every call is counted."""

    def __init__(self, accepted_per_draft: float) -> None:
        self.accepted_per_draft = accepted_per_draft
        self.calls: list[str] = []

    async def acceptance(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> AcceptanceCounts | MetricError:
        self.calls.append("acceptance")
        drafts = 20_000.0
        return AcceptanceCounts(
            drafts=drafts,
            draft_tokens=4 * drafts,
            accepted_tokens=self.accepted_per_draft * drafts,
            requests=2000,  # ~10 drafts each, none longer than 50 tokens: Mirror's bound
            longest_request_tokens=50.0,
        )

    async def step_itl_histogram(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> StepHistogram | MetricError:
        self.calls.append("histogram")
        return StepHistogram(upper_bounds=(0.1, float("inf")), cumulative_counts=(0.0, 0.0))


def _spec(gates: list[dict[str, Any]], mirror: bool) -> dict[str, Any]:
    """An ngram rollout with one stage of `gates` (Mirror: no load pods to ask)."""
    stage: dict[str, Any] = {**STAGE, "gates": gates}
    analysis: dict[str, Any] = {"stages": [stage], "intervalSeconds": 15}
    if mirror:
        analysis["traffic"] = {
            "source": "Mirror",
            "mirrorPairing": "ServerSide",
            "httpRoute": "llm",
        }
        # Mirror never promotes on acceptance alone: a later stage holds the latency gate.
        # ... and an enforced ErrorRate gate (issue 33: from the engines' outcome counters).
        errors = {"name": "errors", "type": "ErrorRate"}
        analysis["stages"].append({**STAGE, "name": "tail", "gates": [SERVER_TAIL, errors]})
    else:
        stage["concurrency"] = 4
    spec = SpecDecodeRolloutSpec.model_validate(
        {
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "engine": {"image": "vllm/vllm-openai:v0.11.2"},
            "speculative": NGRAM.model_dump(mode="json", exclude_none=True),
            "analysis": analysis,
        }
    )
    dumped: dict[str, Any] = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


async def _analyze(spec: dict[str, Any], sources: CountingSources) -> Decision:
    """Reconcile to Analyzing, then look once past minDurationSeconds."""
    kube, cluster, clock = FakeKube(), FakeCluster(), FakeClock()
    cluster.indexes["routes"][NAMESPACE].append(http_route("llm"))
    runtime: Runtime = make_runtime(kube, cluster, clock)
    runtime.acceptance = sources
    runtime.step_latency = sources
    decision = await reconcile(runtime, RolloutRead(ref("1"), spec, None, {}))
    store_children(cluster, spec, decision.children)
    for _ in range(4):  # Deploying -> Analyzing, then looks
        if decision.status.phase is Phase.ANALYZING and clock.current > _started(decision):
            break
        decision = await reconcile(
            runtime, RolloutRead(ref(kube.current_version or "1"), spec, status_of(decision), {})
        )
        store_children(cluster, spec, decision.children)
    assert decision.status.phase is Phase.ANALYZING, decision.status
    clock.advance(75)
    return await reconcile(
        runtime, RolloutRead(ref(kube.current_version or "1"), spec, status_of(decision), {})
    )


def _started(decision: Decision) -> datetime:
    measure_from = decision.status.stages[0].measure_from
    assert measure_from is not None
    return measure_from


LENGTH_ONLY: list[dict[str, Any]] = [{"name": "tokens-per-step", "type": "AcceptedLength"}]
SERVER_TAIL: dict[str, Any] = {"name": "p99-step", "type": "TailLatency"}


@pytest.mark.parametrize(
    ("accepted_per_draft", "phase"),
    [(2.0, StagePhase.SUCCESSFUL), (0.05, StagePhase.FAILED)],
    ids=["long-proposals-pass", "short-proposals-fail"],
)
async def test_an_accepted_length_only_stage_decides(
    accepted_per_draft: float, phase: StagePhase
) -> None:
    sources = CountingSources(accepted_per_draft)
    decided = await _analyze(_spec(LENGTH_ONLY, mirror=True), sources)
    gate = decided.status.stages[0].gates[0]
    assert "acceptance" in sources.calls, gate.reason
    assert decided.status.stages[0].phase is phase, (gate.verdict, gate.reason)


async def test_a_stage_fetches_only_what_its_measured_gates_declare() -> None:
    """ErrorRate reads request outcomes (load pods): no counters, no histograms; a gate
    not judged for ngram (Acceptance, for fixed-k methods) reads nothing."""
    gates: list[dict[str, Any]] = [
        {"name": "errors", "type": "ErrorRate"},
        {"name": "alpha", "type": "Acceptance", "methods": ["eagle3"]},
    ]
    sources = CountingSources(2.0)
    await _analyze(_spec(gates, mirror=False), sources)
    assert sources.calls == []


async def test_a_server_step_tail_gate_reads_the_histograms_not_the_counters() -> None:
    gates: list[dict[str, Any]] = [
        *LENGTH_ONLY,
        {"name": "p99", "type": "TailLatency", "dryRun": True},
    ]
    sources = CountingSources(2.0)
    await _analyze(_spec(gates, mirror=True), sources)
    assert sorted(set(sources.calls)) == ["acceptance", "histogram"]
