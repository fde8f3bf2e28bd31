"""Render the shadow-load pods of one stage run (pure, like the engine children).

Shards split one seeded request stream (shard s of S sends s, s+S, ...), so both sides
replay the same requests; every pod carries the run's plan hash, so stale pods are told
apart by a label and deleted, never reused. More: docs/internals.md.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from specdecode.adapters.render import (
    ROLE_LABEL,
    ROLLOUT_LABEL,
    Owner,
    render_template,
    template_environment,
)
from specdecode.api import SpecDecodeRolloutSpec, TrafficSourceType
from specdecode.domain import load_flags
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_flags import REPORT_PORT
from specdecode.domain.load_report import TOKEN_ENV
from specdecode.domain.observations import SHADOW_ROLES, ChildRole

LOAD_ROLE = "shadow-load"
SIDE_LABEL = "specdecode.io/side"
SHARD_LABEL = "specdecode.io/shard"
PLAN_LABEL = "specdecode.io/load-plan"
STAGE_LABEL = "specdecode.io/stage"
# The per-rollout Secret whose token every control request to a load pod must carry
# (`adapters.kube.load_token`); the pod reads it from this environment variable.
TOKEN_KEY = "token"


def token_secret_name(rollout: str) -> str:
    """The Secret holding the rollout's load-pod token."""
    return f"{rollout}-load-token"


STATE_DIR = "/var/run/specdecode-load"
PROMPTS_DIR = "/etc/specdecode-load/prompts"
PROMPTS_FILE = "prompts.jsonl"


@dataclass(frozen=True)
class LoadPodSpec:
    """One pod to run: its side, shard and the rendered object."""

    side: ChildRole
    shard: int
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        """The pod's name."""
        return str(self.manifest["metadata"]["name"])


def plan_hash(plan: TrafficPlan) -> str:
    """A short stable hash of everything that makes a stage run's load what it is."""
    identity = {
        "stage": plan.stage_name,
        "candidate": plan.candidate_fingerprint,
        "concurrency": plan.concurrency,
        "rate": plan.request_rate,
        "started": plan.started_at.isoformat() if plan.started_at else None,
        "pods": plan.shape.pods_per_side,
        "processes": plan.shape.processes_per_pod,
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return digest[:10]


def load_pod_name(rollout: str, side: ChildRole, shard: int, hashed: str) -> str:
    """`<rollout>-load-<side>-<shard>-<plan hash>`."""
    return f"{rollout}-load-{side.value}-{shard}-{hashed}"


def split(total: int, parts: int, index: int) -> int:
    """Shard `index`'s share of `total` split as evenly as integers allow."""
    return total // parts + (1 if index < total % parts else 0)


def _shard_args(spec: SpecDecodeRolloutSpec, plan: TrafficPlan, shard: int) -> list[str]:
    traffic = spec.analysis.traffic
    shards = plan.shape.pods_per_side
    args: list[str] = []
    if plan.concurrency is not None:
        args += ["--concurrency", str(split(plan.concurrency, shards, shard))]
    else:
        args += ["--request-rate", _number((plan.request_rate or 1.0) / shards)]
    if traffic.max_requests_per_stage is not None:
        args += ["--max-requests", str(split(traffic.max_requests_per_stage, shards, shard))]
    if traffic.max_output_tokens_per_stage is not None:
        budget = split(traffic.max_output_tokens_per_stage, shards, shard)
        args += ["--max-output-tokens", str(budget)]
    return args


def _args(
    spec: SpecDecodeRolloutSpec,
    plan: TrafficPlan,
    side: ChildRole,
    shard: int,
    endpoints: list[str],
    hashed: str,
) -> list[str]:
    traffic = spec.analysis.traffic
    prompts = (
        ["--prompts-file", f"{PROMPTS_DIR}/{PROMPTS_FILE}"]
        if traffic.config_map_ref is not None or traffic.secret_ref is not None
        else [
            *["--builtin-workload", traffic.builtin_workload],
            *["--builtin-count", str(load_flags.BUILTIN_PROMPT_COUNT)],
        ]
    )
    endpoint_args = [arg for url in endpoints for arg in ("--endpoint", url)]
    return [
        *["--side", side.value, "--shard", str(shard)],
        *["--shards", str(plan.shape.pods_per_side)],
        *["--processes", str(plan.shape.processes_per_pod)],
        *["--model", spec.model.served_name],
        *prompts,
        *["--seed", str(traffic.seed), "--max-tokens", str(traffic.max_tokens)],
        *["--temperature", _number(traffic.temperature), "--top-p", _number(traffic.top_p)],
        *_shard_args(spec, plan, shard),
        *["--max-in-flight", str(load_flags.MAX_IN_FLIGHT)],
        *["--request-timeout", _number(traffic.request_timeout_seconds)],
        *["--block-seconds", str(traffic.load_generator.block_seconds)],
        *["--max-blocks", str(load_flags.MAX_BLOCKS), "--state-dir", STATE_DIR],
        *["--restart-warmup-seconds", _number(load_flags.WARMUP_SECONDS)],
        *["--drain-seconds", _number(load_flags.DRAIN_SECONDS)],
        *["--listen", f"{load_flags.LISTEN_HOST}:{REPORT_PORT}"],
        *["--stage", plan.stage_name, "--plan", hashed],
        *endpoint_args,
    ]


def _number(value: float) -> str:
    """A number as its shortest exact spelling: the pod parses back the model's very value
    (a fixed precision such as `:g` rounds 0.987654321 to 0.987654)."""
    return repr(value)


def _volumes(spec: SpecDecodeRolloutSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    traffic = spec.analysis.traffic
    volumes: list[dict[str, Any]] = [{"name": "state", "emptyDir": {"sizeLimit": "256Mi"}}]
    mounts: list[dict[str, Any]] = [{"name": "state", "mountPath": STATE_DIR}]
    items = None
    if traffic.config_map_ref is not None:
        items = [{"key": traffic.config_map_ref.key, "path": PROMPTS_FILE}]
        volumes.append(
            {"name": "prompts", "configMap": {"name": traffic.config_map_ref.name, "items": items}}
        )
    elif traffic.secret_ref is not None:
        items = [{"key": traffic.secret_ref.key, "path": PROMPTS_FILE}]
        secret = {"secretName": traffic.secret_ref.name, "items": items}
        volumes.append({"name": "prompts", "secret": secret})
    if items is not None:
        mounts.append({"name": "prompts", "mountPath": PROMPTS_DIR, "readOnly": True})
    return volumes, mounts


def render_load_pods(
    owner: Owner,
    spec: SpecDecodeRolloutSpec,
    plan: TrafficPlan,
    endpoints: dict[ChildRole, list[str]],
    default_image: str,
) -> list[LoadPodSpec]:
    """Every load pod the stage run needs, both sides, all shards."""
    generator = spec.analysis.traffic.load_generator
    hashed = plan_hash(plan)
    volumes, mounts = _volumes(spec)
    cpu = _cpu_times(generator.cpu_per_process, plan.shape.processes_per_pod)
    resources = {
        "requests": {"cpu": cpu, "memory": generator.memory},
        "limits": {"memory": generator.memory},
    }
    templates = template_environment()
    pods: list[LoadPodSpec] = []
    for side in SHADOW_ROLES:
        for shard in range(plan.shape.pods_per_side):
            labels = {
                "app.kubernetes.io/component": LOAD_ROLE,
                "app.kubernetes.io/instance": owner.name,
                "app.kubernetes.io/managed-by": "specdecode-operator",
                "app.kubernetes.io/name": "specdecode-load",
                PLAN_LABEL: hashed,
                ROLE_LABEL: LOAD_ROLE,
                ROLLOUT_LABEL: owner.name,
                SHARD_LABEL: str(shard),
                SIDE_LABEL: side.value,
                STAGE_LABEL: plan.stage_name,
            }
            values = {
                "name": load_pod_name(owner.name, side, shard, hashed),
                "object_namespace": owner.namespace,
                "labels": labels,
                "owner_references": [owner.reference()],
                "image": generator.image or default_image,
                "args": _args(spec, plan, side, shard, endpoints.get(side, []), hashed),
                "port": REPORT_PORT,
                "token_env": TOKEN_ENV,
                "token_secret": {"name": token_secret_name(owner.name), "key": TOKEN_KEY},
                "resources": resources,
                "volumes": volumes,
                "volume_mounts": mounts,
            }
            manifest = render_template(templates, "load-pod.yaml.j2", values)
            pods.append(LoadPodSpec(side=side, shard=shard, manifest=manifest))
    return pods


def _cpu_times(quantity: str, times: int) -> str:
    """A CPU quantity multiplied by the processes a pod runs, in millicores."""
    millis = float(quantity[:-1]) if quantity.endswith("m") else float(quantity) * 1000
    return f"{round(millis * times)}m"


def uses_load_pods(spec: SpecDecodeRolloutSpec | None) -> bool:
    """Only Prompts traffic is sent by load pods (Mirror traffic is the gateway's)."""
    return spec is not None and spec.analysis.traffic.source is TrafficSourceType.PROMPTS
