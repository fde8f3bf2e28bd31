"""A restart at every reconcile changes nothing: the same statuses, the same Events, once.

Issue 35 item 2: every value a decision reads lives in the rollout's status or is observed
from the cluster; the operator's memory (`adapters.process_caches`) only saves requests. Here one
scripted analysis (a look every 15 s, two stages passing on the engines' counters and
histograms and the load pods' reports, then the promotion) is driven twice through
`reconcile` on the controller fakes: by one long-lived runtime, and by a fresh runtime at
every reconcile that reads only what the API server stores (a restarted process after
kopf's LIST). Both must write the same status after every step, post the same Events
exactly once and send the same writes (a restart re-applies the promotion ConfigMap, the
same; nothing else). Rollouts: Mirror traffic, an Owned one on the operator's own prompts
(load pods), adopted ones (`workloadRef`) under GitOps (the owner commits the passed
config) and Patch (the operator's apply of the args is refused until the owner edits the
source: a refusal is not re-sent at the generation it was refused at), and two with an
object in the way (a user's Service named like a child, a user's ConfigMap named like the
promotion files) whose findings used to live in memory."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from controller_fakes import NAME, NAMESPACE, FakeClock, FakeCluster, FakeKube, make_runtime
from restart_world import (
    AdoptedSource,
    Evidence,
    adopted_spec,
    echo_writes,
    load_pods_answering,
    prompts_spec,
)
from test_gate_needs import LENGTH_ONLY, _spec
from test_reconcile import http_route, ref

from specdecode.domain.child_names import child_name
from specdecode.domain.observations import ChildRole
from specdecode.reconciler import promotion_patch, workload
from specdecode.reconciler.reconcile import reconcile
from specdecode.reconciler.runtime import Runtime

pytestmark = pytest.mark.unit

STEPS = 24  # Deploying, Analyzing's looks (15 s apart) through both stages, and after


@dataclass
class Run:
    """What one drive left: the status after each reconcile, the Events (in order), the
    writes sent (in order) and how many requests in all."""

    statuses: list[Any]
    events: list[str]
    writes: list[str]
    requests: int


@dataclass(frozen=True)
class Rollout:
    """A scripted rollout: its spec, the world it runs in, and what its owner does when."""

    spec: dict[str, Any]
    source: Callable[[], AdoptedSource | None] = lambda: None
    in_the_way: tuple[str, str] | None = None  # (kind, name): an object the rollout does not own
    shows: str = "Promoted"  # a condition's reason the statuses must show on the way
    load_pods: bool = False


async def _drive(
    restart: bool, rollout: Rollout, monkeypatch: pytest.MonkeyPatch
) -> tuple[Run, AdoptedSource | None]:
    kube, cluster, clock = FakeKube(), FakeCluster(), FakeClock()
    monkeypatch.setattr(secrets, "token_urlsafe", lambda size: "the-load-token")  # two runs alike
    if rollout.in_the_way is not None:
        kube.add_uncached(*rollout.in_the_way)
    cluster.indexes["routes"][NAMESPACE].append(http_route("llm"))
    evidence, source = Evidence(), rollout.source()
    if source is not None:
        monkeypatch.setattr(workload, "read_source", source.read)
        monkeypatch.setattr(promotion_patch, "apply_promotion", source.apply)

    def fresh() -> Runtime:
        runtime = make_runtime(kube, cluster, clock, load_image="operator:test")
        runtime.acceptance = runtime.step_latency = runtime.request_outcomes = evidence
        if rollout.load_pods:
            runtime.http = load_pods_answering()
        return runtime

    runtime = fresh()
    statuses: list[Any] = []
    for step in range(STEPS):
        if restart:
            runtime = fresh()
        if source is not None:
            source.owner_acts(step, kube.status)
        sent = len(kube.calls)
        await reconcile(runtime, ref(kube.current_version or "1"), rollout.spec, kube.status, {})
        echo_writes(kube, cluster, sent)
        statuses.append(kube.status)
        clock.advance(15)
    writes = kube.writes() + (source.writes() if source is not None else [])
    return Run(statuses, kube.event_reasons(), writes, len(kube.calls)), source


MIRROR, PROMPTS = _spec(LENGTH_ONLY, mirror=True), prompts_spec()
USERS_SERVICE = ("Service", child_name(NAME, ChildRole.BASELINE))  # named like a child
USERS_CONFIG_MAP = ("ConfigMap", f"{NAME}-promotion")  # named like the promotion files
GITOPS, PATCH = adopted_spec(PROMPTS, "GitOps"), adopted_spec(PROMPTS, "Patch")
ROLLOUTS = {
    "mirror": Rollout(MIRROR),
    "mirror-not-owned": Rollout(MIRROR, in_the_way=USERS_SERVICE, shows="ChildNotOwned"),
    "owned-prompts": Rollout(PROMPTS, load_pods=True),
    "adopted-gitops": Rollout(GITOPS, AdoptedSource, load_pods=True, shows="AwaitingOwner"),
    "adopted-gitops-not-owned": Rollout(
        GITOPS, AdoptedSource, load_pods=True, in_the_way=USERS_CONFIG_MAP, shows="ChildNotOwned"
    ),
    "adopted-patch": Rollout(PATCH, AdoptedSource, load_pods=True, shows="PatchConflict"),
}


def _promotion_files(write: str) -> bool:
    """Whether `write` is an apply of the promotion ConfigMap: the one write a restart
    repeats (`adapters.process_caches.WriteEcho`: applied once more per process, the same)."""
    method, args, _ = json.loads(write)
    return (
        method in ("apply", "apply-unforced") and args[0]["metadata"]["name"] == f"{NAME}-promotion"
    )


def _files_written(writes: list[str]) -> set[str]:
    """The contents the promotion ConfigMap was applied with."""
    return {json.dumps(json.loads(w)[1][0]["data"]) for w in writes if _promotion_files(w)}


@pytest.mark.parametrize("name", list(ROLLOUTS))
async def test_a_restart_at_every_reconcile_writes_and_announces_the_same(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rollout = ROLLOUTS[name]
    kept, kept_source = await _drive(False, rollout, monkeypatch)
    restarted, restarted_source = await _drive(True, rollout, monkeypatch)
    phases = [status["phase"] for status in kept.statuses]
    assert phases[-1] == "Promoted", phases  # the scripted analysis reached a verdict
    assert len({repr(status) for status in kept.statuses}) >= 5  # ... status changed on the way
    assert restarted.statuses == kept.statuses
    assert restarted.events == kept.events
    assert len(set(kept.events)) == len(kept.events)  # each Event once
    others = [[w for w in run.writes if not _promotion_files(w)] for run in (kept, restarted)]
    assert others[1] == others[0]  # every other write the same, in the same order
    assert _files_written(restarted.writes) == _files_written(kept.writes)
    repeated = len(restarted.writes) - len(kept.writes)
    shown = {c["reason"] for s in kept.statuses for c in s["conditions"] if c["status"] == "True"}
    assert rollout.shows in shown, shown
    if name == "adopted-patch":  # refused at generation 1, sent again only at 2
        for source in (kept_source, restarted_source):
            assert source is not None and source.applied == [(1, True), (2, False)]
    # The caches only save requests: a restart costs a few reads (or repeats), never a
    # different write. (Printed: how many, measured.)
    print(
        f"{name}: requests kept {kept.requests}, restarted at every look "
        f"{restarted.requests} ({repeated} promotion ConfigMap applies repeated)"
    )
