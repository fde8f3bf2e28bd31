"""The world a scripted analysis runs in, for the restart test: evidence that passes both
stages, an adopted source whose owner acts on a script, the watch echoing what was
written, and Prompts load pods answering.

All of it is cluster or backend state (what a restarted operator finds again), never the
operator's memory: a fresh runtime at every reconcile reads the same.
"""

from __future__ import annotations

import copy
import functools
import json
from datetime import datetime
from typing import Any

import httpx
from controller_fakes import FakeCluster, FakeKube
from test_adoption_reconcile import MODEL, SERVED, source
from test_gate_needs import NGRAM, SERVER_TAIL, STAGE, CountingSources, _spec

from specdecode.adapters.kube.cache import rollout_key
from specdecode.adapters.metrics import EngineSelector
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import SpecDecodeRolloutSpec, WrittenRolloutSpec
from specdecode.api.engine_args import without_speculative
from specdecode.domain.adoption import args_running
from specdecode.domain.load_report import LoadReport, report_to_wire
from specdecode.domain.observations import (
    AcceptedMoments,
    EngineOutcomes,
    LatencyBlock,
    MetricError,
    StepHistogram,
)
from specdecode.domain.sketch import Sketch

PROMOTION_MANAGER = "specdecode-operator-promotion"


class Evidence(CountingSources):
    """Counters at 3 tokens per step, both engines' step ITL within (20, 20.2] ms over
    10,000 steps, no failed request: every gate of both stages passes."""

    def __init__(self) -> None:
        super().__init__(2.0)

    async def step_itl_histogram(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> StepHistogram | MetricError:
        self.calls.append("histogram")
        bounds = (0.02, 0.0202, 0.0204, float("inf"))
        return StepHistogram(bounds, (0.0, 10_000.0, 10_000.0, 10_000.0), steps=10_000.0)

    async def request_outcomes(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> EngineOutcomes | MetricError:
        self.calls.append("outcomes")
        return EngineOutcomes(by_reason={"stop": 2000.0}, scraped=True, in_flight_known=True)


def adopted_spec(owned: dict[str, Any], strategy: str) -> dict[str, Any]:
    """`owned`'s candidate and analysis, on the Deployment `chat` (what its vLLM container
    states stands for model and engine), promoted by `strategy`."""
    return {
        "workloadRef": {"name": "chat"},
        "speculative": owned["speculative"],
        "analysis": owned["analysis"],
        "promotion": {"strategy": strategy},
    }


OWNERS_ARGS = [MODEL, "--port", "8000", "--served-model-name", SERVED]
OWNER_EDITS_AT = 12  # a look after the verdict: the owner commits, or edits the source


class AdoptedSource:
    """The Deployment `chat` as the API server keeps it, and its owner's script.

    GitOps: the owner commits the passed config at step OWNER_EDITS_AT. Patch: the args
    are the owner's (`kubectl apply`), so the operator's apply is refused until the owner
    edits the source at OWNER_EDITS_AT (it releases them): then one apply lands and the
    source runs the candidate. `applied` lists each apply sent: (generation, refused).
    """

    def __init__(self) -> None:
        self.generation, self.args = 1, list(OWNERS_ARGS)
        self.ours = False  # whether the promotion's manager holds the args
        self.owner_holds_args = True
        self.applied: list[tuple[int, bool]] = []
        self.sent: list[str] = []

    def read(
        self, kube: Any, namespace: str, name: str
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        deployment = copy.deepcopy(source(self.args))
        deployment["metadata"]["generation"] = self.generation
        deployment["status"]["observedGeneration"] = self.generation
        if self.ours:
            fields: dict[str, Any] = {
                "f:spec": {"f:template": {"f:spec": {"f:containers": {"f:args": {}}}}}
            }
            entry = {"manager": PROMOTION_MANAGER, "operation": "Apply", "fieldsV1": fields}
            deployment["metadata"]["managedFields"] = [entry]
        services = [{"metadata": {"name": "chat"}, "spec": {"selector": {"app": "chat"}}}]
        return deployment, services

    def apply(
        self, kube: Any, namespace: str, name: str, container: str, args: list[str], m: str
    ) -> str | None:
        refused = self.owner_holds_args
        self.applied.append((self.generation, refused))
        self.sent.append(json.dumps(["promotion-apply", [self.generation, args], {}]))
        if refused:
            return 'conflict with "kubectl-client-side-apply" with fields ...args'
        self.args, self.ours, self.generation = list(args), True, self.generation + 1
        return None

    def owner_acts(self, step: int, status: dict[str, Any] | None) -> None:
        """The owner's turn, before the reconcile of `step`."""
        if step != OWNER_EDITS_AT:
            return
        phase = (status or {}).get("phase")
        assert phase == "Promoting", f"the script expects Promoting at step {step}: {status}"
        if self.applied:  # Patch: refused so far; the owner releases the args (an edit)
            self.owner_holds_args = False
        else:
            # GitOps: the owner's commit
            self.args = args_running(without_speculative(self.args), setting_of(NGRAM))
        self.generation += 1

    def writes(self) -> list[str]:
        """The promotion applies sent, with the source's generation at each."""
        return list(self.sent)


def echo_writes(kube: FakeKube, cluster: FakeCluster, since: int) -> None:
    """The watch delivering what was written since request `since`: children applied
    stored as the API server returns them, load pods created shown Running (an address,
    Ready), whatever was deleted gone from the cache."""
    for method, args, _ in kube.calls[since:]:
        if "apply" in method and args[0]["metadata"]["name"].endswith("-splitter"):
            cluster.store(args[0])
            if args[0]["kind"] == "Deployment":  # its ReplicaSet's pod, Running and Ready
                _run_splitter_pod(cluster, args[0])
        elif "apply" in method and args[0]["kind"] in ("Deployment", "Service"):
            cluster.store(args[0])
        elif method == "core.create_namespaced_pod":
            pod = copy.deepcopy(args[1])
            side = pod["metadata"]["labels"]["specdecode.io/side"]
            ip = "10.1.0.1" if side == "baseline" else "10.1.1.1"
            pod["status"] = {"podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]}
            bucket = cluster.indexes["pods"][rollout_key(pod)]
            bucket[:] = [
                *(o for o in bucket if o["metadata"]["name"] != pod["metadata"]["name"]),
                pod,
            ]
        elif method.split(".")[-1] in _DELETES:
            kind = _DELETES[method.split(".")[-1]]
            for bucket in cluster.indexes[kind].values():
                bucket[:] = [o for o in bucket if o["metadata"]["name"] != args[0]]


SPLITTER_IP = "10.3.0.1"


def _run_splitter_pod(cluster: FakeCluster, deployment: dict[str, Any]) -> None:
    """The splitter Deployment's pod as the watch shows it once running (one per plan)."""
    template = copy.deepcopy(deployment["spec"]["template"])
    plan = template["metadata"]["labels"].get("specdecode.io/load-plan", "")
    name = f"{deployment['metadata']['name']}-{plan}"
    metadata = {
        **template["metadata"],
        "name": name,
        "namespace": deployment["metadata"]["namespace"],
    }
    ready = {"podIP": SPLITTER_IP, "conditions": [{"type": "Ready", "status": "True"}]}
    pod = {"metadata": metadata, "spec": template["spec"], "status": ready}
    bucket = cluster.indexes["pods"][rollout_key(pod)]
    bucket[:] = [
        *(
            o
            for o in bucket
            if not o["metadata"]["name"].startswith(deployment["metadata"]["name"])
        ),
        pod,
    ]


_DELETES = {
    "delete_namespaced_deployment": "deployments",
    "delete_namespaced_service": "services",
    "delete_namespaced_pod": "pods",
}


# 1000 requests of 20 decode steps, 2 draft tokens accepted per step on average (the
# counters' 3 tokens per step): the per-request acceptance the splitter's streams show.
ACCEPTED = functools.reduce(
    AcceptedMoments.plus, [AcceptedMoments.one(20, 40 + (i % 2) * 4 - 2) for i in range(1000)]
)


def load_pods_answering() -> httpx.AsyncClient:
    """The load pods' HTTP side: endpoint pushes taken; a report of one 2 s block of 50
    chunks since the asked instant (the gates judge the engines' counters and histograms;
    the load pods' reports say the traffic ran)."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/endpoints":
            return httpx.Response(204)
        assert request.url.path == "/v1/report", request.url
        since = float(request.url.params["since"])
        side = request.url.params.get("side")  # the splitter measures both sides
        if side is None:
            side = "baseline" if request.url.host.startswith("10.1.0.") else "candidate"
        sketch = Sketch.of([0.02] * 50)
        block = LatencyBlock(
            start=since,
            seconds=2.0,
            per_chunk_itl=sketch,
            chunks=50,
            requests_ok=1000,
            accepted=ACCEPTED,
        )
        report = LoadReport(side, 0, 1, 0.0, 0, 2.0, 5, 50, False, blocks=(block,))
        return httpx.Response(200, json=report_to_wire(report))

    return httpx.AsyncClient(transport=httpx.MockTransport(answer))


def prompts_spec() -> dict[str, Any]:
    """An Owned rollout on the operator's own prompts (load pods): one stage judged by the
    load pods' request outcomes (ErrorRate), then one by the engines' step-ITL tail."""
    spec = _spec([{"name": "errors", "type": "ErrorRate"}], mirror=False)
    tail = {**STAGE, "name": "tail", "concurrency": 4, "gates": [SERVER_STEP_TAIL]}
    spec["analysis"]["stages"].append(tail)
    parsed = SpecDecodeRolloutSpec.model_validate(spec)
    dumped: dict[str, Any] = parsed.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


SERVER_STEP_TAIL = {**SERVER_TAIL, "itlDefinition": "ServerStep"}


def adopted_mirror_spec() -> dict[str, Any]:
    """An adopted Deployment (`chat`) judged on live traffic mirrored through the splitter
    (the owner's route mirrors to it; no route of ours): one stage of the engines' counters,
    then one of their step-ITL tail and request outcomes, promoted by GitOps."""
    spec = _spec([{"name": "alpha", "type": "Acceptance"}], mirror=True)
    spec["analysis"]["traffic"] = {"source": "Mirror"}  # Splitter pairing, its default
    tail = spec["analysis"]["stages"][1]
    tail["gates"] = [SERVER_STEP_TAIL, *(g for g in tail["gates"] if g["type"] == "ErrorRate")]
    adopted = adopted_spec(spec, "GitOps")
    parsed = WrittenRolloutSpec.model_validate(adopted)
    dumped: dict[str, Any] = parsed.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped
