"""A rendered load pod's argv, read back by `specdecode-load`'s own parser, is the model.

Each value a load pod runs with has one owner: the rollout's spec (the CRD), the stage's
plan, or `domain.load_flags`; the operator renders every one. Two checks, for the two ways
a second owner creeps in:
- Parsed with the load program's defaults removed, the argv sets every flag but the other
  side of an either/or and the switch for runs by hand: no value falls back to a default
  of the load program's own, which could drift from the CRD's (`--request-timeout` 600
  did, against `requestTimeoutSeconds` 120).
- Parsed as the pod parses it (`parse_config`), every `LoadConfig` field equals the value
  its owner gives. `owned_values` names an owner for each field, so a new field (a new
  flag) fails here until it has one.
The spec sets every traffic field off its default, with more digits than `:g` keeps.
"""

from __future__ import annotations

import argparse
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from render_cases import UID, example_spec

from specdecode.adapters.load.pods import (
    PROMPTS_DIR,
    PROMPTS_FILE,
    STATE_DIR,
    LoadPodSpec,
    plan_hash,
    render_load_pods,
    split,
)
from specdecode.adapters.render import Owner
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain import load_flags
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_report import TOKEN_ENV
from specdecode.domain.load_sizing import LoadShape
from specdecode.domain.observations import ChildRole
from specdecode.domain.prompts import SamplingDefaults, ShadowRequest, builtin_prompts, parse_jsonl
from specdecode_load.config import LoadConfig, build_parser, parse_config
from specdecode_load.pool import parse_endpoint
from specdecode_load.report_server import BIND_HOST_ENV

pytestmark = pytest.mark.unit

OWNER = Owner("llama-8b", "team-a", UID)
TOKEN = "s3cret"  # the rollout's load token: a Secret, read from the environment
ENDPOINTS = {
    ChildRole.BASELINE: ["http://10.0.0.1:8000"],
    ChildRole.CANDIDATE: ["http://10.0.0.2:8000", "http://10.0.0.3:8000"],
}
# Every traffic field the load pods read, off its default.
TRAFFIC: dict[str, Any] = {
    "builtinWorkload": "code",
    "maxTokens": 77,
    "temperature": 0.123456789,
    "topP": 0.987654321,
    "seed": 11,
    "requestTimeoutSeconds": 45.0625,
    "loadGenerator": {"blockSeconds": 3},
}
CAPS = {"maxRequestsPerStage": 1001, "maxOutputTokensPerStage": 50001}
PROMPTS_REF = {"configMapRef": {"name": "prompts", "key": "set.jsonl"}}
PROMPT_LINES = '{"prompt": "a"}\n{"prompt": "b", "max_tokens": 5, "temperature": 1.5}\n'
LOCAL_ONLY = {"help", "allow_no_token"}  # runs by hand; a pod has its token


def plan(concurrency: int | None, request_rate: float | None) -> TrafficPlan:
    return TrafficPlan(
        stage_name="tail-latency",
        candidate_fingerprint="abc",
        concurrency=concurrency,
        request_rate=request_rate,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        shape=LoadShape(pods_per_side=2, processes_per_pod=3),
    )


CASES = [
    pytest.param({**TRAFFIC, **CAPS}, plan(65, None), id="built-in-closed-loop-capped"),
    pytest.param({**TRAFFIC, **PROMPTS_REF}, plan(None, 10 / 3), id="configmap-open-loop"),
]


def spec_with(traffic: dict[str, Any]) -> SpecDecodeRolloutSpec:
    wire = example_spec("examples/specdecode-rollout.yaml").to_wire()
    analysis = dict(cast("dict[str, Any]", wire["analysis"]))
    analysis["traffic"] = traffic
    return SpecDecodeRolloutSpec.model_validate({**wire, "analysis": analysis})


def argv_of(pod: LoadPodSpec) -> list[str]:
    args: list[str] = pod.manifest["spec"]["containers"][0]["args"]
    return args


def flags_set_by(argv: list[str]) -> set[str]:
    """The destinations the argv itself sets: the parser with every default removed."""
    parser = build_parser()
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv)))


def owned_values(
    spec: SpecDecodeRolloutSpec, traffic_plan: TrafficPlan, pod: LoadPodSpec
) -> dict[str, object]:
    """What each LoadConfig field must be, from its owner (one entry per field)."""
    traffic = spec.analysis.traffic
    shards = traffic_plan.shape.pods_per_side

    def share(total: int | None) -> int | None:
        return None if total is None else split(total, shards, pod.shard)

    sampling = SamplingDefaults(temperature=traffic.temperature, top_p=traffic.top_p)
    prompts: list[ShadowRequest]
    if traffic.config_map_ref is None:
        count, seed = load_flags.BUILTIN_PROMPT_COUNT, traffic.seed
        prompts = builtin_prompts(
            traffic.builtin_workload, count, seed, traffic.max_tokens, sampling
        )
    else:
        prompts = parse_jsonl(PROMPT_LINES, traffic.max_tokens, sampling)
    rate = traffic_plan.request_rate
    return {
        "side": pod.side.value,
        "shard": pod.shard,
        "shards": shards,
        "processes": traffic_plan.shape.processes_per_pod,
        "endpoints": tuple(parse_endpoint(url) for url in ENDPOINTS[pod.side]),
        "model": spec.model.served_name,
        "prompts": tuple(prompts),
        "seed": traffic.seed,
        "concurrency": share(traffic_plan.concurrency),
        "request_rate": None if rate is None else rate / shards,
        "max_in_flight": load_flags.MAX_IN_FLIGHT,
        "max_requests": share(traffic.max_requests_per_stage),
        "max_output_tokens": share(traffic.max_output_tokens_per_stage),
        "request_timeout": traffic.request_timeout_seconds,
        "block_seconds": traffic.load_generator.block_seconds,
        "max_blocks": load_flags.MAX_BLOCKS,
        "state_dir": Path(STATE_DIR),
        "restart_warmup_seconds": load_flags.WARMUP_SECONDS,
        "drain_seconds": load_flags.DRAIN_SECONDS,
        "listen_host": load_flags.LISTEN_HOST,
        "listen_port": load_flags.REPORT_PORT,
        "stage": traffic_plan.stage_name,
        "plan": plan_hash(traffic_plan),
        "token": TOKEN,
    }


@pytest.mark.parametrize(("traffic", "traffic_plan"), CASES)
def test_every_flag_is_rendered_none_is_left_to_the_load_programs_defaults(
    traffic: dict[str, Any], traffic_plan: TrafficPlan
) -> None:
    spec = spec_with(traffic)
    every = {action.dest for action in build_parser()._actions} - LOCAL_ONLY
    unset = {"request_rate"} if traffic_plan.concurrency is not None else {"concurrency"}
    if "configMapRef" in traffic:
        unset |= {"builtin_workload", "builtin_count"}  # the prompt set is the mounted file
    else:
        unset |= {"prompts_file"}
    if "maxRequestsPerStage" not in traffic:
        unset |= {"max_requests", "max_output_tokens"}  # None: the CRD's "no cap"
    for pod in render_load_pods(OWNER, spec, traffic_plan, ENDPOINTS, "operator:1"):
        assert sorted(every - unset - flags_set_by(argv_of(pod))) == [], pod.name


@pytest.mark.parametrize(("traffic", "traffic_plan"), CASES)
def test_the_pod_reads_back_every_value_its_owner_gives(
    traffic: dict[str, Any],
    traffic_plan: TrafficPlan,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.delenv(BIND_HOST_ENV, raising=False)
    mounted = tmp_path / PROMPTS_FILE  # the ConfigMap's key, as the pod's volume shows it
    mounted.write_text(PROMPT_LINES)
    spec = spec_with(traffic)
    fields = {field.name for field in dataclasses.fields(LoadConfig)}
    pods = render_load_pods(OWNER, spec, traffic_plan, ENDPOINTS, "operator:1")
    assert len(pods) == 4  # two shards a side
    for pod in pods:
        expected = owned_values(spec, traffic_plan, pod)
        assert sorted(fields ^ set(expected)) == [], "a LoadConfig field without an owner"
        argv = [str(mounted) if a == f"{PROMPTS_DIR}/{PROMPTS_FILE}" else a for a in argv_of(pod)]
        config = parse_config(argv)
        assert {name: getattr(config, name) for name in expected} == expected, pod.name
        (container,) = pod.manifest["spec"]["containers"]
        assert container["ports"][0]["containerPort"] == config.listen_port
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert Path(mounts["state"]) == config.state_dir
