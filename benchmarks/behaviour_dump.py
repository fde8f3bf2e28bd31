"""What every reconcile of scripted rollouts writes, announces and asks, as one text dump.

Why: a refactor that must change no behaviour (issue 35) is checked by comparing this dump
before and after it, byte for byte. Each rollout runs through the real `reconcile` on the
controller fakes (tests/unit/controller; fixed clock, scripted metrics and load pods), kept
and restarted at every reconcile. Per reconcile: the status standing after it (JSON, sorted
keys), its wake-up, the Events posted, every write in the order sent (verb, kind/name, body)
and the request counts (API server by verb, metrics by query, drift looks, load-pod HTTP),
then the operator's own series (its /metrics, but for the reconcile durations and the
`_created` timestamps).
Use (from any directory; it imports this checkout's operator/, whatever the venv installed):
    python benchmarks/behaviour_dump.py > out.txt
    python benchmarks/behaviour_dump.py > again.txt && cmp out.txt again.txt  # deterministic
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# The operator next to this script, whatever the venv installed (an editable install may
# point at another checkout), and the controller fakes the rollouts run on.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "controller"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))

from controller_fakes import EAGLE3, NAME, FakeClock, FakeCluster, FakeKube, make_runtime, raw_spec
from kubernetes.client import ApiClient
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
from test_guard_restart import DriftingBlocks, promoted
from test_reconcile import http_route, ref

from specdecode.domain.child_names import child_name
from specdecode.domain.observations import ChildRole
from specdecode.reconciler import load_sync, promotion_patch, workload
from specdecode.reconciler.reconcile import RolloutRead, reconcile
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.status_boundary import status_of

STEPS = 24  # Deploying, the looks 15 s apart through both stages, the promotion and after
SERIALIZE: Callable[[Any], Any] = ApiClient().sanitize_for_serialization
WALL_CLOCK = ("firstTimestamp", "lastTimestamp")  # `post_event` stamps the wall clock
READS = ("read_", "list_", "get_")  # requests that change nothing
# Series that time the machine, not the rollout: the reconcile durations, and each series'
# `_created` sample (the wall-clock second it was first set).
WALL_TIMED_FAMILY, WALL_TIMED_SAMPLE = "specdecode_operator_reconcile_duration", "_created"


@dataclass(frozen=True)
class Scripted:
    """A scripted rollout: its spec, the world it runs in, and how long it is driven."""

    spec: dict[str, Any]
    source: Callable[[], AdoptedSource | None] = lambda: None
    in_the_way: tuple[str, str] | None = None  # an object of that kind/name the rollout lacks
    load_pods: bool = False
    accepted_per_draft: float = 2.0  # the counters' accepted tokens per draft (0.05 fails)
    promoted_drifting: bool = False  # starts Promoted, production's counters drift later
    steps: int = STEPS
    seconds: int = 15  # between reconciles
    edit: dict[str, Any] | None = None  # the spec from step STEPS on (generation 2)


def _invalid() -> dict[str, Any]:
    """A spec the CRD's schema would refuse (a guard window shorter than its interval)."""
    spec = raw_spec(EAGLE3)
    spec["guard"] = {"intervalSeconds": 600, "windowSeconds": 300}
    return spec


def _edited(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with one more speculative token: a new analysis (the promotion files stale)."""
    return {**spec, "speculative": {**spec["speculative"], "num_speculative_tokens": 3}}


def _drift_rollback() -> dict[str, Any]:
    """An EAGLE-3 rollout whose guard rolls production back when it drifts."""
    return {**raw_spec(EAGLE3), "guard": {"onDrift": "Rollback"}}


MIRROR, PROMPTS = _spec(LENGTH_ONLY, mirror=True), prompts_spec()
GITOPS, PATCH = adopted_spec(PROMPTS, "GitOps"), adopted_spec(PROMPTS, "Patch")
ROLLOUTS = {
    "mirror": Scripted(MIRROR),
    "mirror-not-owned": Scripted(
        MIRROR, in_the_way=("Service", child_name(NAME, ChildRole.BASELINE))
    ),
    "owned-prompts": Scripted(PROMPTS, load_pods=True),
    "adopted-gitops": Scripted(GITOPS, AdoptedSource, load_pods=True),
    "adopted-gitops-not-owned": Scripted(
        GITOPS, AdoptedSource, in_the_way=("ConfigMap", f"{NAME}-promotion"), load_pods=True
    ),
    "adopted-gitops-edited": Scripted(
        GITOPS, AdoptedSource, load_pods=True, edit=_edited(GITOPS), steps=STEPS + 3
    ),
    "adopted-patch": Scripted(PATCH, AdoptedSource, load_pods=True),
    "adopted-mirror": Scripted(adopted_mirror_spec(), AdoptedSource, load_pods=True),
    "gate-fails-rollback": Scripted(MIRROR, accepted_per_draft=0.05, steps=12),
    "drift-guard-rollback": Scripted(
        _drift_rollback(), promoted_drifting=True, steps=36, seconds=100
    ),
    "invalid-spec": Scripted(_invalid(), steps=3),
}


def _json(value: Any) -> str:
    """`value` as one line of JSON, keys sorted (client models as the API server reads them)."""
    return json.dumps(SERIALIZE(value), sort_keys=True, default=repr)


def _write_line(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """One write sent: its verb, the kind/name it is about, what it sent."""
    body: Any = next((a for a in args if isinstance(a, dict) or hasattr(a, "to_dict")), None)
    if isinstance(body, dict) and "kind" in body:
        what = f"{body['kind']}/{body['metadata']['name']}"
    elif hasattr(body, "to_dict"):
        what = f"Event/{body.metadata.name}"
        body = {k: v for k, v in SERIALIZE(body).items() if k not in WALL_CLOCK}
    else:
        what = "/".join(str(a) for a in args if isinstance(a, str))
    return f"  write {method} {what} {_json([body, kwargs])}"


def _event_line(event: Any) -> str:
    """One Event posted: type, reason, message and its (deterministic) name."""
    return f"  event {event.type} {event.reason} {json.dumps(event.message)} {event.metadata.name}"


class World:
    """The cluster, the backends and the clock one drive runs against (never the operator's
    memory: a restarted runtime finds them again), and what each has been asked so far."""

    def __init__(self, rollout: Scripted) -> None:
        self.rollout, self.kube, self.cluster = rollout, FakeKube(), FakeCluster()
        self.clock, self.http = FakeClock(), Counter[str]()
        self.evidence, self.source = Evidence(), rollout.source()
        self.evidence.accepted_per_draft = rollout.accepted_per_draft
        promoted_at = self.clock.now() - timedelta(seconds=600)
        self.blocks = DriftingBlocks(promoted_at)
        if rollout.in_the_way is not None:
            self.kube.add_uncached(*rollout.in_the_way)
        self.cluster.indexes["routes"][ref().namespace].append(http_route("llm"))
        if rollout.promoted_drifting:
            state = promoted(self.clock.now()).model_copy(update={"phase_since": promoted_at})
            wire = status_of(state)  # the test's helper builds the domain's state
            self.kube.status = wire.model_dump(mode="json", by_alias=True, exclude_none=True)
            self.kube.current_version = "7"
        self.saved: list[tuple[Any, str, Any]] = []
        self._patch(secrets, "token_urlsafe", lambda size=None: "the-load-token")
        # The endpoint pushes' timer (time.monotonic) on the fixed clock, not the machine's.
        monotonic = SimpleNamespace(monotonic=lambda: self.clock.now().timestamp())
        self._patch(load_sync, "time", monotonic)
        if self.source is not None:
            self._patch(workload, "read_source", self.source.read)
            self._patch(promotion_patch, "apply_promotion", self.source.apply)

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self.saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def close(self) -> None:
        """Put back what the drive replaced."""
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)

    async def _count(self, request: Any) -> None:
        self.http[request.url.path] += 1

    def runtime(self) -> Runtime:
        """A fresh runtime on this world (a process just started)."""
        runtime = make_runtime(self.kube, self.cluster, self.clock, load_image="operator:test")
        runtime.acceptance = runtime.step_latency = self.evidence
        runtime.request_outcomes = self.evidence
        runtime.acceptance_blocks = self.blocks
        if self.rollout.load_pods:
            runtime.http = load_pods_answering()
            runtime.http.event_hooks["request"].append(self._count)
        return runtime

    async def reconcile(self, runtime: Runtime, step: int) -> list[str]:
        """The owner's turn, then one reconcile and the watch's echo: its dump lines."""
        kube, source = self.kube, self.source
        if source is not None:
            source.owner_acts(step, kube.status)
        sent, asked, http = len(kube.calls), len(self.evidence.calls), Counter(self.http)
        looks, applied = len(self.blocks.asked), len(source.sent) if source else 0
        spec, generation = self.rollout.spec, 1
        if self.rollout.edit is not None and step >= STEPS:
            spec, generation = self.rollout.edit, 2
        read = RolloutRead(ref(kube.current_version or "1", generation), spec, kube.status, {})
        try:
            outcome = f"wake_at {(await reconcile(runtime, read)).wake_at}"
        except Exception as error:  # what a reconcile raises is behaviour too
            outcome = f"raised {type(error).__name__}: {error}"
        echo_writes(kube, self.cluster, sent)
        calls = kube.calls[sent:]
        events = [a[1] for m, a, _ in calls if m.endswith("create_namespaced_event")]
        drift = [f"{a.isoformat()}..{b.isoformat()}" for a, b in self.blocks.asked[looks:]]
        return [
            f"-- reconcile {step} at {self.clock.now().isoformat()}: {outcome}",
            f"  status {_json(kube.status)}",
            *(_event_line(event) for event in events),
            *(_write_line(*call) for call in calls if not call[0].split(".")[-1].startswith(READS)),
            *(f"  write {line}" for line in (source.writes()[applied:] if source else [])),
            f"  requests api {len(calls)} {_json(dict(Counter(m for m, _, _ in calls)))}",
            f"  requests metrics {_json(dict(Counter(self.evidence.calls[asked:])))}",
            f"  requests drift looks {_json(drift)}",
            f"  requests http {_json(dict(self.http - http))}",
            *(f"  metric {sample}" for sample in _samples(runtime)),
        ]


def _samples(runtime: Runtime) -> list[str]:
    """The operator's own series after a reconcile, as /metrics would show them (sorted),
    but for what times the machine (`WALL_TIMED_FAMILY`, `WALL_TIMED_SAMPLE`)."""
    return sorted(
        f"{sample.name}{_json(sample.labels)} {sample.value}"
        for family in runtime.metrics.registry.collect()
        if not family.name.startswith(WALL_TIMED_FAMILY)
        for sample in family.samples
        if not sample.name.endswith(WALL_TIMED_SAMPLE)
    )


async def drive(name: str, rollout: Scripted, restart: bool, out: list[str]) -> int:
    """`rollout` driven its steps through `reconcile` (a fresh runtime before each with
    `restart`), its dump appended to `out`; returns how many reconciles ran."""
    world = World(rollout)
    out.append(f"== {name} ({'restarted at every reconcile' if restart else 'kept'}) ==")
    runtime = world.runtime()
    try:
        for step in range(rollout.steps):
            runtime = world.runtime() if restart else runtime
            out.extend(await world.reconcile(runtime, step))
            world.clock.advance(rollout.seconds)
    finally:
        world.close()
    out.append(
        f"== {name} totals: api {len(world.kube.calls)} metrics {len(world.evidence.calls)} "
        f"http {sum(world.http.values())} drift looks {len(world.blocks.asked)}"
    )
    return rollout.steps


async def dump() -> list[str]:
    """Every scripted rollout, kept and restarted at every reconcile, as dump lines."""
    out: list[str] = []
    reconciles = 0
    for name, rollout in ROLLOUTS.items():
        for restart in (False, True):
            reconciles += await drive(name, rollout, restart, out)
    out.append(f"== {len(ROLLOUTS)} rollouts, {2 * len(ROLLOUTS)} drives, {reconciles} reconciles")
    return out


if __name__ == "__main__":
    sys.stdout.write("\n".join(asyncio.run(dump())) + "\n")
