"""Load pods: what a stage run's pods must say (sides, shards, restricted security, args)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest
from render_cases import UID, example_spec

from specdecode.adapters.load.pods import (
    PLAN_LABEL,
    SIDE_LABEL,
    plan_hash,
    render_load_pods,
    split,
)
from specdecode.adapters.render import ROLLOUT_LABEL, Owner
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_sizing import LoadShape
from specdecode.domain.observations import ChildRole

pytestmark = pytest.mark.unit

SPEC = example_spec("examples/specdecode-rollout.yaml")
OWNER = Owner("llama-8b", "team-a", UID)
STARTED = datetime(2026, 1, 1, tzinfo=UTC)
ENDPOINTS = {
    ChildRole.BASELINE: ["http://10.0.0.1:8000"],
    ChildRole.CANDIDATE: ["http://10.0.0.2:8000", "http://10.0.0.3:8000"],
}


def plan(**overrides: Any) -> TrafficPlan:
    fields: dict[str, Any] = {
        "stage_name": "tail-latency",
        "candidate_fingerprint": "abc",
        "concurrency": 65,
        "request_rate": None,
        "started_at": STARTED,
        "shape": LoadShape(pods_per_side=2, processes_per_pod=3),
    }
    return TrafficPlan(**{**fields, **overrides})


def args_of(pod: dict[str, Any]) -> dict[str, list[str]]:
    args = pod["spec"]["containers"][0]["args"]
    options: dict[str, list[str]] = {}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        options.setdefault(flag, []).append(value)
    return options


def with_traffic(**traffic: Any) -> SpecDecodeRolloutSpec:
    wire = SPEC.to_wire()
    analysis = dict(cast("dict[str, Any]", wire["analysis"]))
    analysis["traffic"] = {**analysis.get("traffic", {}), **traffic}
    wire["analysis"] = analysis
    return SpecDecodeRolloutSpec.model_validate(wire)


def test_each_side_gets_its_shards_with_the_stage_split_between_them() -> None:
    pods = render_load_pods(OWNER, SPEC, plan(), ENDPOINTS, "operator:1")
    assert [(p.side, p.shard) for p in pods] == [
        (ChildRole.BASELINE, 0),
        (ChildRole.BASELINE, 1),
        (ChildRole.CANDIDATE, 0),
        (ChildRole.CANDIDATE, 1),
    ]
    options = [args_of(p.manifest) for p in pods]
    assert [o["--concurrency"] for o in options] == [["33"], ["32"], ["33"], ["32"]]
    assert {o["--shards"][0] for o in options} == {"2"}
    assert {o["--processes"][0] for o in options} == {"3"}
    assert options[0]["--endpoint"] == ENDPOINTS[ChildRole.BASELINE]
    assert options[2]["--endpoint"] == ENDPOINTS[ChildRole.CANDIDATE]
    # Both sides replay the same seeded stream: identical request options.
    same = ("--seed", "--model", "--max-tokens", "--temperature", "--builtin-workload")
    assert all(options[0][flag] == options[2][flag] for flag in same)


def test_pods_are_owned_labelled_and_restricted() -> None:
    (pod, *_) = render_load_pods(OWNER, SPEC, plan(), ENDPOINTS, "operator:1")
    manifest = pod.manifest
    assert manifest["metadata"]["ownerReferences"][0]["uid"] == UID
    labels = manifest["metadata"]["labels"]
    assert labels[ROLLOUT_LABEL] == "llama-8b" and labels[SIDE_LABEL] == "baseline"
    assert labels[PLAN_LABEL] == plan_hash(plan())
    spec = manifest["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = spec["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["image"] == "operator:1"
    assert container["command"] == ["specdecode-load"]
    # Three processes at the default 1 CPU each; memory bounded; no CPU limit.
    assert container["resources"] == {
        "requests": {"cpu": "3000m", "memory": "512Mi"},
        "limits": {"memory": "512Mi"},
    }


def test_a_new_stage_run_is_a_new_plan_hash() -> None:
    assert plan_hash(plan()) == plan_hash(plan())
    rerun = plan(started_at=datetime(2026, 1, 2, tzinfo=UTC))
    for other in (rerun, plan(stage_name="x"), plan(candidate_fingerprint="def")):
        assert plan_hash(other) != plan_hash(plan())


def test_prompts_come_from_the_named_config_map_and_caps_are_split() -> None:
    spec = with_traffic(
        configMapRef={"name": "prompts", "key": "set.jsonl"},
        maxOutputTokensPerStage=1001,
        temperature=0.7,
    )
    pods = render_load_pods(OWNER, spec, plan(), ENDPOINTS, "operator:1")
    options = args_of(pods[0].manifest)
    assert options["--prompts-file"] == ["/etc/specdecode-load/prompts/prompts.jsonl"]
    assert options["--temperature"] == ["0.7"]
    assert [args_of(p.manifest)["--max-output-tokens"] for p in pods[:2]] == [["501"], ["500"]]
    volumes = pods[0].manifest["spec"]["volumes"]
    assert {
        "name": "prompts",
        "configMap": {"name": "prompts", "items": [{"key": "set.jsonl", "path": "prompts.jsonl"}]},
    } in volumes


def test_open_loop_rate_is_split_across_shards() -> None:
    pods = render_load_pods(
        OWNER, SPEC, plan(concurrency=None, request_rate=3.0), ENDPOINTS, "operator:1"
    )
    assert args_of(pods[0].manifest)["--request-rate"] == ["1.5"]


@pytest.mark.parametrize(("total", "parts"), [(65, 2), (7, 3), (1, 4), (0, 1)])
def test_split_adds_up(total: int, parts: int) -> None:
    shares = [split(total, parts, i) for i in range(parts)]
    assert sum(shares) == total and max(shares) - min(shares) <= 1
