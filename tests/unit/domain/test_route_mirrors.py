"""RequestMirror filters on a user's HTTPRoute: only ours change, and only when they differ."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import Decision, DesiredChildren, TrafficPlan
from specdecode.domain.mirror_wanted import mirror_route_problem, splitter_service, wanted_mirrors
from specdecode.domain.pass_decision import with_mirror_status
from specdecode.domain.rollout_settings import RolloutSettings
from specdecode.domain.rollout_state import MirrorRecord, RolloutState
from specdecode.domain.route_mirrors import (
    MIRRORS_ANNOTATION,
    MirrorWanted,
    filters_patch,
    mirror_filter,
    route_problem,
)
from specdecode.reconciler.rollout_boundary import settings_of
from specdecode.reconciler.spec_boundary import mirror_traffic_of

pytestmark = pytest.mark.unit

SHADOWS = ("llama-baseline", "llama-candidate")
HEADER_FILTER = {
    "type": "RequestHeaderModifier",
    "requestHeaderModifier": {"set": [{"name": "x-team", "value": "a"}]},
}
THEIR_MIRROR = mirror_filter("audit-log", 9000, 5)


def wanted(percent: int = 10, mirroring: bool = True, route: str | None = "llm") -> MirrorWanted:
    return MirrorWanted(
        route=route,
        production_service="llama",
        own_services=frozenset(SHADOWS),
        services=SHADOWS if mirroring else (),
        port=8000,
        percent=percent,
    )


def route(name: str = "llm", *rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team-a", "resourceVersion": "42"},
        "spec": {"rules": list(rules)},
    }


def to(service: str, **extra: Any) -> dict[str, Any]:
    return {"backendRefs": [{"name": service, "port": 8000}], **extra}


def apply(obj: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """A tiny JSON-patch applier for the operations filters_patch emits."""
    result = copy.deepcopy(obj)
    for op in operations:
        if op["op"] == "test":
            assert result["metadata"]["resourceVersion"] == op["value"]
            continue
        if op["path"].startswith("/metadata/annotations"):
            _apply_annotation(result["metadata"], op)
            continue
        _, _, _, index, _ = op["path"].split("/")
        result["spec"]["rules"][int(index)]["filters"] = op["value"]
    return result


def _apply_annotation(metadata: dict[str, Any], op: dict[str, Any]) -> None:
    if op["path"] == "/metadata/annotations":
        assert op["op"] == "add" and "annotations" not in metadata
        metadata["annotations"] = op["value"]
        return
    key = op["path"].removeprefix("/metadata/annotations/").replace("~1", "/")
    if op["op"] == "remove":
        del metadata["annotations"][key]  # KeyError: removing what is not there fails
    else:
        metadata["annotations"][key] = op["value"]


def test_rules_toward_production_get_both_mirrors_after_the_users_filters() -> None:
    before = route("llm", to("llama", filters=[HEADER_FILTER]), to("other-model"))
    operations = filters_patch(before, wanted())
    assert operations[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}
    after = apply(before, operations)
    assert after["spec"]["rules"][0]["filters"] == [
        HEADER_FILTER,
        mirror_filter("llama-baseline", 8000, 10),
        mirror_filter("llama-candidate", 8000, 10),
    ]
    assert "filters" not in after["spec"]["rules"][1]
    assert [op["path"] for op in operations[1:]] == ["/spec/rules/0/filters"]


def test_a_rule_without_filters_gets_an_add_operation() -> None:
    operations = filters_patch(route("llm", to("llama")), wanted())
    assert operations[1]["op"] == "add"


def test_a_converged_route_is_not_patched() -> None:
    before = route("llm", to("llama", filters=[HEADER_FILTER]))
    after = apply(before, filters_patch(before, wanted()))
    assert filters_patch(after, wanted()) == []


def test_a_changed_percent_replaces_only_our_filters() -> None:
    before = apply(route("llm", to("llama", filters=[THEIR_MIRROR])), [])
    before = apply(before, filters_patch(before, wanted(percent=10)))
    after = apply(before, filters_patch(before, wanted(percent=50)))
    assert after["spec"]["rules"][0]["filters"] == [
        THEIR_MIRROR,
        mirror_filter("llama-baseline", 8000, 50),
        mirror_filter("llama-candidate", 8000, 50),
    ]


def test_when_no_stage_runs_ours_are_removed_and_theirs_stay() -> None:
    before = route("llm", to("llama", filters=[HEADER_FILTER, THEIR_MIRROR]))
    mirrored = apply(before, filters_patch(before, wanted()))
    after = apply(mirrored, filters_patch(mirrored, wanted(mirroring=False)))
    assert after["spec"]["rules"][0]["filters"] == [HEADER_FILTER, THEIR_MIRROR]


def test_other_routes_lose_our_mirrors_even_while_a_stage_runs() -> None:
    stale = route("old-route", to("llama", filters=[mirror_filter("llama-candidate", 8000, 10)]))
    after = apply(stale, filters_patch(stale, wanted(route="llm")))
    assert after["spec"]["rules"][0]["filters"] == []


def test_a_mirror_to_a_same_named_service_elsewhere_is_not_ours() -> None:
    elsewhere = mirror_filter("llama-candidate", 8000, 10)
    elsewhere["requestMirror"]["backendRef"]["namespace"] = "team-b"
    before = route("llm", to("other-model", filters=[elsewhere]))
    assert filters_patch(before, wanted()) == []


def test_route_problems_name_the_route_and_the_service() -> None:
    assert route_problem([], wanted()) == (
        "HTTPRoute llm does not exist in the rollout's namespace"
    )
    unrelated = route("llm", to("other-model"))
    assert route_problem([unrelated], wanted()) == (
        "HTTPRoute llm has no rule whose backendRefs include Service llama"
    )
    assert route_problem([route("llm", to("llama"))], wanted()) is None
    assert route_problem([], wanted(route=None)) is None


def spec_with(traffic: dict[str, Any]) -> SpecDecodeRolloutSpec:
    return SpecDecodeRolloutSpec.model_validate(
        {
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "engine": {"image": "vllm/vllm-openai:v0.11.2", "port": 8080},
            "speculative": {
                "method": "eagle3",
                "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                "num_speculative_tokens": 3,
            },
            "analysis": {"traffic": traffic},
        }
    )


PLAN = TrafficPlan(
    stage_name="acceptance", candidate_fingerprint="f", concurrency=None, request_rate=None
)


def test_a_mirror_rollout_wants_both_shadows_only_while_a_stage_runs() -> None:
    server_side = {"source": "Mirror", "mirrorPairing": "ServerSide"}
    spec = spec_with({**server_side, "httpRoute": "llm", "mirrorPercent": 25})
    running = wanted_mirrors("llama", mirror_traffic_of(spec), PLAN)
    assert (running.route, running.services, running.port, running.percent) == (
        "llm",
        SHADOWS,
        8080,
        25,
    )
    assert wanted_mirrors("llama", mirror_traffic_of(spec), None).services == ()


def test_prompt_rollouts_and_deleted_ones_want_no_mirrors() -> None:
    for found in (
        wanted_mirrors("llama", mirror_traffic_of(spec_with({})), PLAN),
        wanted_mirrors("llama", None, None),
    ):
        assert found.route is None and found.services == ()
        assert found.own_services == frozenset(SHADOWS)
        assert found.marked_services == frozenset(("llama-splitter",))


SPLITTER = "llama-splitter"
USERS_SPLITTER_MIRROR = mirror_filter(SPLITTER, 8080, 50)


def splitter_wanted(route: str | None = "llm", mirroring: bool = True) -> MirrorWanted:
    return MirrorWanted(
        route=route,
        production_service="llama",
        own_services=frozenset(SHADOWS),
        rollout="llama",
        marked_services=frozenset((SPLITTER,)),
        services=(SPLITTER,) if mirroring and route else (),
        port=8080,
        percent=10,
    )


@pytest.mark.parametrize(
    "wanted_now",
    [splitter_wanted(route=None), splitter_wanted(route=None, mirroring=False)],
    ids=["stage-running-without-httpRoute", "no-stage-or-deleted"],
)
def test_a_users_own_mirror_toward_the_splitter_is_theirs(wanted_now: MirrorWanted) -> None:
    """An adopted Deployment's owner (or a rollout without httpRoute) mirrors to the
    splitter from their own route: the operator never strips it (the old code treated
    every filter toward the splitter as its own, anywhere in the namespace)."""
    theirs = route("gitops-route", to("chat", filters=[HEADER_FILTER, USERS_SPLITTER_MIRROR]))
    assert filters_patch(theirs, wanted_now) == []


def test_the_operators_splitter_mirror_is_marked_and_given_back_whole() -> None:
    before = route("llm", to("llama", filters=[HEADER_FILTER]))
    mirrored = apply(before, filters_patch(before, splitter_wanted()))
    assert mirrored["spec"]["rules"][0]["filters"] == [
        HEADER_FILTER,
        mirror_filter(SPLITTER, 8080, 10),
    ]
    assert mirrored["metadata"]["annotations"] == {MIRRORS_ANNOTATION: "llama"}
    assert filters_patch(mirrored, splitter_wanted()) == []  # converged
    after = apply(mirrored, filters_patch(mirrored, splitter_wanted(mirroring=False)))
    assert after["spec"]["rules"][0]["filters"] == [HEADER_FILTER]
    assert after["metadata"]["annotations"] == {}


def test_a_route_no_longer_named_loses_the_splitter_mirror_we_wrote_there() -> None:
    before = route("old", to("llama"))
    before["metadata"]["annotations"] = {"team": "a"}
    mirrored = apply(before, filters_patch(before, splitter_wanted(route="old")))
    assert mirrored["metadata"]["annotations"] == {"team": "a", MIRRORS_ANNOTATION: "llama"}
    # httpRoute removed (or renamed): the marked route is ours to clean, the mark goes too
    after = apply(mirrored, filters_patch(mirrored, splitter_wanted(route=None)))
    assert after["spec"]["rules"][0]["filters"] == []
    assert after["metadata"]["annotations"] == {"team": "a"}


def test_another_rollouts_mark_is_kept() -> None:
    shared = route(
        "llm", to("llama"), to("qwen", filters=[mirror_filter("qwen-splitter", 8080, 5)])
    )
    shared["metadata"]["annotations"] = {MIRRORS_ANNOTATION: "qwen"}
    mirrored = apply(shared, filters_patch(shared, splitter_wanted()))
    assert mirrored["metadata"]["annotations"] == {MIRRORS_ANNOTATION: "llama,qwen"}
    after = apply(mirrored, filters_patch(mirrored, splitter_wanted(mirroring=False)))
    assert after["metadata"]["annotations"] == {MIRRORS_ANNOTATION: "qwen"}
    assert after["spec"]["rules"][1]["filters"] == [mirror_filter("qwen-splitter", 8080, 5)]


def test_a_splitter_rollout_without_a_route_writes_no_route() -> None:
    """No httpRoute (always so with a workloadRef): a stage running writes nothing on any
    route, not even one toward production; with one, the named route gets the mirror."""
    toward_production = route("llm", to("llama"))
    running = wanted_mirrors("llama", mirror_traffic_of(spec_with({"source": "Mirror"})), PLAN)
    assert filters_patch(toward_production, running) == []
    named = wanted_mirrors(
        "llama", mirror_traffic_of(spec_with({"source": "Mirror", "httpRoute": "llm"})), PLAN
    )
    after = apply(toward_production, filters_patch(toward_production, named))
    assert after["spec"]["rules"][0]["filters"] == [mirror_filter(SPLITTER, 8080, 10)]


def test_status_names_the_splitter_service_and_the_route_we_write() -> None:
    """status.mirror: the name an adopted Deployment's owner mirrors to, read from the
    rollout; the route only when the spec names one; nothing without the splitter."""
    decision = Decision(status=RolloutState(), children=DesiredChildren(None))
    own = with_mirror_status(
        splitter_service("llama"), settings_with({"source": "Mirror"}), decision
    ).status.mirror
    assert own == MirrorRecord(splitter_service="llama-splitter:8080", http_route=None)
    routed = with_mirror_status(
        splitter_service("llama"), settings_with({"source": "Mirror", "httpRoute": "llm"}), decision
    ).status.mirror
    assert routed is not None and routed.http_route == "llm"
    prompts = with_mirror_status(splitter_service("llama"), settings_with({}), decision)
    assert prompts is decision and prompts.status.mirror is None
    was_mirror = with_mirror_status(
        splitter_service("llama"), settings_with({"source": "Mirror"}), decision
    )
    assert (
        with_mirror_status(splitter_service("llama"), settings_with({}), was_mirror).status.mirror
        is None
    )


def test_a_users_own_splitter_mirror_on_the_named_route_is_refused_not_taken_over() -> None:
    """httpRoute names a route where the user already mirrors to the splitter: adding ours
    would copy each request twice, and taking theirs over would strip it when the stage
    ends (review finding). The route is reported instead, and nothing is written there."""
    theirs = route("llm", to("llama", filters=[USERS_SPLITTER_MIRROR]))
    problem = route_problem([theirs], splitter_wanted())
    assert problem is not None and "already mirrors to Service llama-splitter" in problem
    ours = apply(
        route("llm", to("llama")), filters_patch(route("llm", to("llama")), splitter_wanted())
    )
    assert route_problem([ours], splitter_wanted()) is None  # control: the filter we marked


def test_a_mirror_rollouts_route_problem_names_the_source_and_a_prompt_rollout_has_none() -> None:
    spec = spec_with({"source": "Mirror", "mirrorPairing": "ServerSide", "httpRoute": "llm"})
    assert mirror_route_problem([], "llama", mirror_traffic_of(spec)) == (
        "traffic source Mirror: HTTPRoute llm does not exist in the rollout's namespace"
    )
    assert (
        mirror_route_problem([route("llm", to("llama"))], "llama", mirror_traffic_of(spec)) is None
    )
    assert mirror_route_problem("no Gateway API", "llama", mirror_traffic_of(spec)) == (
        "traffic source Mirror: no Gateway API"
    )
    assert mirror_route_problem([], "llama", mirror_traffic_of(spec_with({}))) is None


def settings_with(traffic: dict[str, object]) -> RolloutSettings:
    """`spec_with`'s spec as the decision reads it (`reconciler.rollout_boundary`)."""
    return settings_of(spec_with(traffic))
