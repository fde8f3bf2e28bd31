"""A restart at every reconcile changes nothing: the same statuses, the same Events, once.

Issue 35 item 2: every value a decision reads lives in the rollout's status or is observed
from the cluster; the operator's memory (`adapters.process_caches`) only saves requests.
Here one scripted analysis (a look every 15 s, two stages passing on the engines' counters
and histograms and the load pods' reports, then the promotion) is driven twice through
`reconcile` on the controller fakes: by one long-lived runtime, and by a fresh runtime at
every reconcile that reads only what the API server stores (a restarted process after kopf's
LIST). Both must write the same status after every step, post the same Events exactly once
and send the same writes (the promotion ConfigMap too: a restarted process reads it back
rather than applying it again). Rollouts: Mirror traffic, an Owned one on the operator's own
prompts (load pods), adopted ones (`workloadRef`) under GitOps (the owner commits the passed
config) and Patch (the operator's apply of the args is refused until the owner edits the
source: a refusal is not re-sent at the generation it was refused at), and two with an
object in the way (a user's Service named like a child, a user's ConfigMap named like the
promotion files) whose findings used to live in memory, and an adopted one on live traffic
mirrored through the splitter. A restart between the promotion ConfigMap's write and a spec
edit still deletes it once stale."""

from __future__ import annotations

import copy
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
    adopted_mirror_spec,
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
from specdecode.reconciler.reconcile import RolloutRead, reconcile
from specdecode.reconciler.runtime import Runtime

pytestmark = pytest.mark.unit

STEPS = 24  # Deploying, Analyzing's looks (15 s apart) through both stages, and after
EDITED_STEPS = 3  # after a spec edit: a new analysis begins


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
    restart: bool | Callable[[int], bool],
    rollout: Rollout,
    monkeypatch: pytest.MonkeyPatch,
    edit: dict[str, Any] | None = None,
) -> tuple[Run, AdoptedSource | None]:
    """`rollout` driven STEPS looks (restarted before each step `restart` names), then,
    with `edit`, its spec edited (generation 2) and driven EDITED_STEPS more."""
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
    for step in range(STEPS if edit is None else STEPS + EDITED_STEPS):
        if restart is True or (callable(restart) and restart(step)):
            runtime = fresh()
        if source is not None:
            source.owner_acts(step, kube.status)
        sent = len(kube.calls)
        spec, generation = (rollout.spec, 1) if step < STEPS or edit is None else (edit, 2)
        version = kube.current_version or "1"
        await reconcile(runtime, RolloutRead(ref(version, generation), spec, kube.status, {}))
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
    "adopted-mirror": Rollout(
        adopted_mirror_spec(), AdoptedSource, load_pods=True, shows="AwaitingOwner"
    ),
}


def _sent(writes: list[str], kind: str, name: str) -> list[str]:
    """The applies of the object `kind`/`name` among `writes`."""
    return [
        w
        for w in writes
        if "apply" in json.loads(w)[0]
        and (json.loads(w)[1][0]["kind"], json.loads(w)[1][0]["metadata"]["name"]) == (kind, name)
    ]


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
    # Every write the same, in the same order: the promotion ConfigMap too (a restarted
    # process reads the cluster's copy instead of applying it once more).
    assert restarted.writes == kept.writes
    shown = {c["reason"] for s in kept.statuses for c in s["conditions"] if c["status"] == "True"}
    assert rollout.shows in shown, shown
    if name == "adopted-patch":  # refused at generation 1, sent again only at 2
        for source in (kept_source, restarted_source):
            assert source is not None and source.applied == [(1, True), (2, False)]
    if name == "adopted-mirror":  # judged through the splitter (its reports carry the
        # per-request acceptance the alpha gate needs), the owner's route mirroring to it
        assert _sent(kept.writes, "Deployment", f"{NAME}-splitter")
        assert kept.statuses[-1]["mirror"] == {
            "splitterService": f"{NAME}-splitter:8080",
            "httpRoute": None,
        }
    # The caches only save requests: a restart costs a few reads, never a different write.
    # (Printed: how many, measured.)
    print(f"{name}: requests kept {kept.requests}, restarted at every look {restarted.requests}")


def _deletes(kube_writes: list[str], name: str) -> list[str]:
    """The deletes of the ConfigMap `name` among `kube_writes`."""
    return [
        w
        for w in kube_writes
        if json.loads(w)[0] == "core.delete_namespaced_config_map" and json.loads(w)[1][0] == name
    ]


@pytest.mark.parametrize(
    "restarts",
    [lambda step: False, lambda step: step == STEPS, lambda step: True],
    ids=["kept", "restarted-before-the-edit", "restarted-at-every-look"],
)
async def test_a_restarted_operator_deletes_the_promotion_files_its_predecessor_wrote(
    restarts: Callable[[int], bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The promotion ConfigMap is written once Promoting and goes stale when the spec is
    edited (a new analysis: no patch stands). A process restarted between the write and
    the edit deletes it as the one that wrote it would: what stands is read from the
    cluster, not remembered (it was kept, forever, by a restarted process before)."""
    rollout = ROLLOUTS["adopted-gitops"]
    edited = copy.deepcopy(rollout.spec)
    edited["speculative"]["num_speculative_tokens"] = 3
    run, _ = await _drive(restarts, rollout, monkeypatch, edit=edited)
    name = f"{NAME}-promotion"
    assert len(_sent(run.writes, "ConfigMap", name)) == 1  # written once, at Promoting
    assert run.statuses[STEPS - 1]["phase"] == "Promoted"
    assert run.statuses[-1]["phase"] != "Promoted"  # the edit began a new analysis
    assert len(_deletes(run.writes, name)) == 1  # ... and the stale files went, once
