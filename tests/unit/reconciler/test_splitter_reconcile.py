"""The operator's side of the Mirror splitter: rendered, kept, read, and mirrored to."""

from __future__ import annotations

import json
from typing import Any, cast

import httpx
import pytest
from load_fakes import ENGINE_IPS, OWNER, PLAN, SPEC, FakeCore, engine_pods, report, runtime

from specdecode.adapters.kube.load_pods import observed_splitter_pods
from specdecode.adapters.load.splitter import MIRROR_PORT, render_splitter
from specdecode.api import MirrorPairing, SpecDecodeRolloutSpec, TrafficSourceType
from specdecode.domain.child_names import splitter_name
from specdecode.domain.load_report import TOKEN_ENV
from specdecode.domain.mirror_wanted import wanted_mirrors
from specdecode.domain.observations import LatencySamples, MetricError
from specdecode.domain.route_mirrors import mirror_filter
from specdecode.reconciler import splitter as splitter_module
from specdecode.reconciler.report_windows import read_windows
from specdecode.reconciler.spec_boundary import mirror_traffic_of
from specdecode.reconciler.splitter import sync_splitter
from specdecode_load.splitter_config import parse_splitter_config

pytestmark = pytest.mark.unit


def mirror_spec(**traffic: Any) -> SpecDecodeRolloutSpec:
    """The example rollout on Mirror traffic, Splitter pairing (its default)."""
    wire = SPEC.to_wire()
    analysis = dict(cast("dict[str, Any]", wire["analysis"]))
    analysis["traffic"] = {"source": "Mirror", "httpRoute": "llm", **traffic}
    wire["analysis"] = analysis
    return SpecDecodeRolloutSpec.model_validate(wire)


def test_the_rendered_splitter_parses_and_runs_restricted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deployment, service = render_splitter(OWNER, mirror_spec(), PLAN, "img:1")
    assert (deployment["kind"], service["kind"]) == ("Deployment", "Service")
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert "limits" not in container["resources"] or "cpu" not in container["resources"]["limits"]
    assert container["env"][0]["name"] == TOKEN_ENV
    assert container["args"][0] == "split"
    monkeypatch.setenv(TOKEN_ENV, "t")
    config = parse_splitter_config(container["args"][1:])  # what the program will read
    assert config.endpoints == {"baseline": (), "candidate": ()}  # pushed once it runs
    assert config.mirror_port == MIRROR_PORT
    assert config.request_timeout == SPEC.analysis.traffic.request_timeout_seconds
    assert config.max_in_flight == 256  # the API's default (spec.analysis.traffic.splitter)
    assert container["resources"]["requests"]["cpu"] == "1"
    # the Service sends the mirror to the splitter's pod, on its mirror port
    template_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= template_labels.items()
    assert service["spec"]["ports"][0]["port"] == MIRROR_PORT
    for obj in (deployment, service):
        assert obj["metadata"]["ownerReferences"][0]["uid"] == OWNER.uid


def test_the_splitter_takes_its_cap_and_cpu_from_the_rollout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = mirror_spec(splitter={"maxInFlight": 4, "cpu": "500m"})
    deployment, _ = render_splitter(OWNER, spec, PLAN, "img:1")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    monkeypatch.setenv(TOKEN_ENV, "t")
    assert parse_splitter_config(container["args"][1:]).max_in_flight == 4
    assert container["resources"]["requests"]["cpu"] == "500m"


def test_the_route_mirrors_once_to_the_splitter_or_twice_server_side() -> None:
    paired = wanted_mirrors("llama-8b", mirror_traffic_of(mirror_spec()), PLAN)
    assert paired.services == (splitter_name("llama-8b"),) and paired.port == MIRROR_PORT
    # (the example's gates are not all ServerSide-judged: copied past validation, since
    # only the traffic matters here)
    traffic = SPEC.analysis.traffic.model_copy(
        update={"source": TrafficSourceType.MIRROR, "mirror_pairing": MirrorPairing.SERVER_SIDE}
    )
    analysis = SPEC.analysis.model_copy(update={"traffic": traffic})
    server_side = SPEC.model_copy(update={"analysis": analysis})
    two = wanted_mirrors("llama-8b", mirror_traffic_of(server_side), PLAN)
    assert two.services == ("llama-8b-baseline", "llama-8b-candidate") and two.port == 8000
    # a filter toward the splitter's Service is ours only on a route we marked
    assert splitter_name("llama-8b") in wanted_mirrors("llama-8b", None, None).marked_services
    assert mirror_filter("llama-8b-splitter", MIRROR_PORT, 10)["requestMirror"]["percent"] == 10


def recorded_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The splitter's applies and deletes, recorded instead of sent."""
    applied: list[dict[str, Any]] = []
    deleted: list[tuple[str, str]] = []

    async def apply(_: Any, objects: Any, __: str, ___: Any = ()) -> list[Any]:
        applied.extend(objects)
        return []

    def delete(_: Any, namespace: str, doomed: Any) -> int:
        deleted.extend(doomed)
        return len(doomed)

    monkeypatch.setattr(splitter_module, "apply_children", apply)
    monkeypatch.setattr(splitter_module, "delete_children", delete)
    return applied, deleted


async def test_sync_applies_the_splitter_while_planned_and_deletes_it_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    core = FakeCore()
    rt = runtime(core)
    applied, deleted = recorded_writes(monkeypatch)
    await sync_splitter(rt, OWNER, mirror_spec(), PLAN)
    assert sorted(o["kind"] for o in applied) == ["Deployment", "Service"]
    assert list(core.secrets) == ["llama-8b-load-token"]  # the token before the pod
    # Prompts traffic wants no splitter; with the objects cached and ours, both go
    rt.cluster.attach(
        {("team-a", "llama-8b"): [applied[0]]},
        {("team-a", "llama-8b"): [applied[1]]},
        rt.cluster.pods,
        {},
    )
    await sync_splitter(rt, OWNER, SPEC, PLAN)
    assert sorted(deleted) == [
        ("Deployment", "llama-8b-splitter"),
        ("Service", "llama-8b-splitter"),
    ]
    deleted.clear()
    foreign = {**applied[1], "metadata": {**applied[1]["metadata"], "ownerReferences": []}}
    rt.cluster.attach({}, {("team-a", "llama-8b"): [foreign]}, rt.cluster.pods, {})
    await sync_splitter(rt, OWNER, mirror_spec(), None)
    assert deleted == []  # not ours: left alone


async def test_between_stages_the_splitter_service_stays_for_the_rollouts_life(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A user who mirrors to `<rollout>-splitter` themselves (an adopted Deployment's
    owner) points at a Service that outlives each stage: the Deployment goes, the Service
    stays (and comes back if deleted) as long as the spec asks for Splitter pairing."""
    rt = runtime(FakeCore())
    applied, deleted = recorded_writes(monkeypatch)
    deployment, service = render_splitter(OWNER, mirror_spec(), PLAN, "img")
    rt.cluster.attach(
        {("team-a", "llama-8b"): [deployment]},
        {("team-a", "llama-8b"): [service]},
        rt.cluster.pods,
        {},
    )
    await sync_splitter(rt, OWNER, mirror_spec(), None)  # the stage ended
    assert deleted == [("Deployment", "llama-8b-splitter")]
    assert applied == []  # the Service is there as rendered: nothing to write
    rt.cluster.attach({}, {}, rt.cluster.pods, {})  # someone deleted the Service
    await sync_splitter(rt, OWNER, mirror_spec(), None)
    assert [(o["kind"], o["metadata"]["name"]) for o in applied] == [
        ("Service", "llama-8b-splitter")
    ]
    assert applied[0]["spec"]["ports"][0]["port"] == MIRROR_PORT


def running_splitter_pod() -> dict[str, Any]:
    """The splitter's pod of PLAN as the watch caches it: an address and Ready."""
    deployment, _ = render_splitter(OWNER, mirror_spec(), PLAN, "img")
    template = deployment["spec"]["template"]
    ready = {"podIP": "10.3.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
    metadata = {"name": "llama-8b-splitter-x", **template["metadata"]}
    return {"metadata": metadata, "spec": template["spec"], "status": ready}


async def test_the_running_splitter_is_pushed_each_sides_engines_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pushed: list[dict[str, Any]] = []

    def splitter_answers(request: httpx.Request) -> httpx.Response:
        pushed.append(json.loads(request.content))
        return httpx.Response(200, content=b"{}")

    rt = runtime(FakeCore(), splitter_answers)

    async def apply(*_: Any) -> list[Any]:
        return []

    monkeypatch.setattr(splitter_module, "apply_children", apply)
    pods = {("team-a", "llama-8b"): [running_splitter_pod(), *engine_pods()]}
    rt.cluster.attach({}, {}, pods, {})
    await sync_splitter(rt, OWNER, mirror_spec(), PLAN)
    assert sorted((p["side"], tuple(p["urls"])) for p in pushed) == [
        ("baseline", ("http://10.2.0.1:8000",)),
        ("candidate", ("http://10.2.0.2:8000",)),
    ]
    pushed.clear()
    await sync_splitter(rt, OWNER, mirror_spec(), PLAN)
    assert pushed == []  # it took them: no push until they change
    ENGINE_IPS["candidate"] = "10.2.0.9"
    try:
        rt.cluster.attach(
            {}, {}, {("team-a", "llama-8b"): [running_splitter_pod(), *engine_pods()]}, {}
        )
        await sync_splitter(rt, OWNER, mirror_spec(), PLAN)
    finally:
        ENGINE_IPS["candidate"] = "10.2.0.2"
    assert [(p["side"], p["urls"]) for p in pushed] == [("candidate", ["http://10.2.0.9:8000"])]


async def test_each_side_is_read_from_the_splitter_and_garbage_is_an_error() -> None:
    core = FakeCore()
    asked: list[str] = []
    answer = {"garbage": False}

    def splitter_answers(request: httpx.Request) -> httpx.Response:
        side = request.url.params["side"]
        asked.append(side)
        body = {"schema": 1} if answer["garbage"] else report(side)
        return httpx.Response(200, content=json.dumps(body))

    rt = runtime(core, splitter_answers)
    pods = observed_splitter_pods([running_splitter_pod()])
    baseline, candidate = await read_windows(
        rt, "team-a/llama-8b", PLAN, pods, 0, 200, splitter=True
    )
    assert sorted(asked) == ["baseline", "candidate"]
    assert isinstance(baseline, LatencySamples) and isinstance(candidate, LatencySamples)
    answer["garbage"] = True
    baseline, _ = await read_windows(rt, "team-a/llama-8b", PLAN, pods, 0, 200, splitter=True)
    assert isinstance(baseline, MetricError)
    # no splitter pod of this run yet: nothing measured, not an incomplete window
    assert await read_windows(rt, "team-a/llama-8b", PLAN, [], 0, 200, splitter=True) == (
        None,
        None,
    )


async def test_a_splitters_echo_is_what_the_next_push_compares_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The endpoints a splitter's report echoes are kept per "<pod>/<side>" for the push:
    an echo of the right engines stops the push, a stale echo (a restarted splitter that
    lost them) brings it back, and the load pods' echo map is never written."""
    pushed: list[tuple[str, tuple[str, ...]]] = []
    echo: dict[str, tuple[str, ...]] = {
        "baseline": ("http://10.2.0.1:8000",),
        "candidate": ("http://10.2.0.2:8000",),
    }

    def splitter_answers(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            side = request.url.params["side"]
            body = report(side) | {"endpoints": list(echo[side])}
            return httpx.Response(200, content=json.dumps(body))
        sent = json.loads(request.content)
        pushed.append((sent["side"], tuple(sent["urls"])))
        return httpx.Response(200, content=b"{}")

    rt = runtime(FakeCore(), splitter_answers)

    async def apply(*_: Any) -> list[Any]:
        return []

    monkeypatch.setattr(splitter_module, "apply_children", apply)
    splitter_pod = running_splitter_pod()
    rt.cluster.attach({}, {}, {("team-a", "llama-8b"): [splitter_pod, *engine_pods()]}, {})
    pods = observed_splitter_pods([splitter_pod])
    await read_windows(rt, "team-a/llama-8b", PLAN, pods, 0, 200, splitter=True)
    assert rt.load_cache.splitter_endpoints["team-a/llama-8b"] == {
        f"{splitter_pod['metadata']['name']}/baseline": echo["baseline"],
        f"{splitter_pod['metadata']['name']}/candidate": echo["candidate"],
    }
    assert "team-a/llama-8b" not in rt.load_cache.endpoints
    await sync_splitter(rt, OWNER, mirror_spec(), PLAN)
    assert pushed == []  # it echoed the engines it should use: nothing to push
    echo["candidate"] = ()  # restarted: it has none
    await read_windows(rt, "team-a/llama-8b", PLAN, pods, 0, 200, splitter=True)
    await sync_splitter(rt, OWNER, mirror_spec(), PLAN)
    assert pushed == [("candidate", ("http://10.2.0.2:8000",))]
