"""RequestMirror filters on a user's HTTPRoute: only ours change, and only when they differ."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from specdecode.adapters.kube.route_mirrors import (
    MirrorWanted,
    filters_patch,
    mirror_filter,
    route_problem,
)
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import TrafficPlan
from specdecode.reconciler.mirror import wanted_mirrors

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
        _, _, _, index, _ = op["path"].split("/")
        result["spec"]["rules"][int(index)]["filters"] = op["value"]
    return result


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
    running = wanted_mirrors("llama", spec, PLAN)
    assert (running.route, running.services, running.port, running.percent) == (
        "llm",
        SHADOWS,
        8080,
        25,
    )
    assert wanted_mirrors("llama", spec, None).services == ()


def test_prompt_rollouts_and_deleted_ones_want_no_mirrors() -> None:
    for found in (
        wanted_mirrors("llama", spec_with({}), PLAN),
        wanted_mirrors("llama", None, None),
    ):
        assert found.route is None and found.services == ()
        assert found.own_services == frozenset((*SHADOWS, "llama-splitter"))
