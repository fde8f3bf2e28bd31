"""Render the shadow splitter of a Mirror stage run (Splitter pairing): Deployment + Service.

Why a one-replica Deployment and a Service: a mirror needs a stable address, the splitter
must come back if its node goes, and pairing happens inside one process. Like the load pods
it carries the stage run's plan hash. More: docs/internals.md.
"""

from __future__ import annotations

from typing import Any

from specdecode.adapters.load.pods import (
    PLAN_LABEL,
    STAGE_LABEL,
    TOKEN_KEY,
    plan_hash,
    token_secret_name,
)
from specdecode.adapters.render import (
    ROLE_LABEL,
    ROLLOUT_LABEL,
    Owner,
    render_template,
    template_environment,
)
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain import load_flags
from specdecode.domain.child_names import splitter_name
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_flags import REPORT_PORT
from specdecode.domain.load_report import TOKEN_ENV

SPLITTER_ROLE = "shadow-splitter"
MIRROR_PORT = load_flags.MIRROR_PORT  # the mirror's target, the splitter's Service port
SPLITTER_MEMORY = "512Mi"


def _args(spec: SpecDecodeRolloutSpec, plan: TrafficPlan) -> list[str]:
    traffic = spec.analysis.traffic
    return [
        "split",
        *["--max-in-flight", str(traffic.splitter_settings.max_in_flight)],
        *["--request-timeout", repr(traffic.request_timeout_seconds)],
        *["--block-seconds", str(traffic.load_generator.block_seconds)],
        *["--max-blocks", str(load_flags.MAX_BLOCKS)],
        *["--drain-seconds", repr(load_flags.DRAIN_SECONDS)],
        *["--listen", f"{load_flags.LISTEN_HOST}:{REPORT_PORT}"],
        *["--mirror-port", str(MIRROR_PORT)],
        *["--stage", plan.stage_name, "--plan", plan_hash(plan)],
    ]


def render_splitter_service(owner: Owner) -> dict[str, Any]:
    """The splitter's Service alone: kept for the rollout's life (a user's own mirror
    points at it between stages too), with no endpoints while no stage runs."""
    service: dict[str, Any] = render_template(
        template_environment(), "service.yaml.j2", _common(owner)
    )
    return service


def _common(owner: Owner) -> dict[str, Any]:
    name = splitter_name(owner.name)
    labels = {
        "app.kubernetes.io/component": SPLITTER_ROLE,
        "app.kubernetes.io/instance": owner.name,
        "app.kubernetes.io/managed-by": "specdecode-operator",
        "app.kubernetes.io/name": "specdecode-load",
        ROLE_LABEL: SPLITTER_ROLE,
        ROLLOUT_LABEL: owner.name,
    }
    selector = {ROLE_LABEL: SPLITTER_ROLE, ROLLOUT_LABEL: owner.name}
    return {
        "name": name,
        "object_namespace": owner.namespace,
        "labels": labels,
        "owner_references": [owner.reference()],
        "selector": selector,
        "port": MIRROR_PORT,
    }


def render_splitter(
    owner: Owner, spec: SpecDecodeRolloutSpec, plan: TrafficPlan, default_image: str
) -> list[dict[str, Any]]:
    """The splitter's Deployment and Service for the stage run `plan`."""
    common = _common(owner)
    pod_labels = {**common["labels"], PLAN_LABEL: plan_hash(plan), STAGE_LABEL: plan.stage_name}
    generator = spec.analysis.traffic.load_generator
    cpu = spec.analysis.traffic.splitter_settings.cpu
    templates = template_environment()
    deployment = render_template(
        templates,
        "splitter.yaml.j2",
        {
            **common,
            "pod_labels": pod_labels,
            "image": generator.image or default_image,
            "args": _args(spec, plan),
            "port": REPORT_PORT,
            "mirror_port": MIRROR_PORT,
            "token_env": TOKEN_ENV,
            "token_secret": {"name": token_secret_name(owner.name), "key": TOKEN_KEY},
            "resources": {
                "requests": {"cpu": cpu, "memory": SPLITTER_MEMORY},
                "limits": {"memory": SPLITTER_MEMORY},
            },
        },
    )
    return [deployment, render_splitter_service(owner)]


def uses_splitter(spec: SpecDecodeRolloutSpec | None) -> bool:
    """Mirror traffic paired and timed by the operator's splitter."""
    return spec is not None and spec.analysis.traffic.splitter_mirror
