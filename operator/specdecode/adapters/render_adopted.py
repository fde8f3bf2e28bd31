"""Shadows of a Deployment another tool owns (`workloadRef`): copies of its pod template.

Why copies: the baseline must be what production runs, including what the rollout's spec
cannot express (sidecars, volumes, probes). Only the speculative setting, the routing
labels and annotations, the DNS identity and the Deployment around it change.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from specdecode.adapters import engine_argv_guard, engine_pod
from specdecode.adapters.render import (
    CONFIG_LABEL,
    DEPLOYMENT_PROGRESS_SLACK_SECONDS,
    ROLE_LABEL,
    ROLLOUT_LABEL,
    SERVING_LABEL,
    SPECULATIVE_CONFIG_ANNOTATION,
    Owner,
    render_template,
    service_context,
    shadow_labels,
    template_environment,
)
from specdecode.adapters.workload_source import routes
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.engine_args import without_speculative
from specdecode.domain.adoption import args_running
from specdecode.domain.child_names import child_name
from specdecode.domain.decision import DesiredChildren
from specdecode.domain.observations import ChildRole
from specdecode.domain.source import SourceObservation
from specdecode.domain.speculative_setting import SpeculativeSetting
from specdecode.speculative_document import fingerprint_of


def render_adopted_shadows(
    owner: Owner,
    spec: SpecDecodeRolloutSpec,
    desired: DesiredChildren,
    source: SourceObservation,
    template: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Baseline and candidate (Deployment, then Service each) when shadows are wanted."""
    if not desired.shadows:
        return []
    children: list[dict[str, Any]] = []
    for role, config in (
        (ChildRole.BASELINE, desired.baseline),
        (ChildRole.CANDIDATE, desired.candidate),
    ):
        children.append(shadow_deployment(owner, spec, role, config, source, template))
        values = service_context(owner, spec, role)
        children.append(render_template(template_environment(), "service.yaml.j2", values))
    return children


def shadow_deployment(
    owner: Owner,
    spec: SpecDecodeRolloutSpec,
    role: ChildRole,
    config: SpeculativeSetting | None,
    source: SourceObservation,
    template: Mapping[str, Any],
) -> dict[str, Any]:
    """One shadow: the source's pod template with the role's config and our labels."""
    pod = copy.deepcopy(dict(template))
    metadata = pod.setdefault("metadata", {})
    metadata.pop("creationTimestamp", None)
    kept = {
        k: v for k, v in (metadata.get("labels") or {}).items() if k not in source.dropped_labels
    }
    pod_labels = shadow_labels(owner.name, role, adopted=True)
    # The Deployment carries the pod's labels but the serving one (which marks pods).
    deployment_labels = {k: v for k, v in pod_labels.items() if k != SERVING_LABEL}
    metadata["labels"] = {**kept, **pod_labels, CONFIG_LABEL: fingerprint_of(config)}
    port = str(spec.engine.port)
    metadata["annotations"] = {
        **{k: v for k, v in (metadata.get("annotations") or {}).items() if not routes(k)},
        "prometheus.io/scrape": "true",
        "prometheus.io/port": port,
        "prometheus.io/path": "/metrics",
        SPECULATIVE_CONFIG_ANNOTATION: "" if config is None else config.to_cli_json(),
    }
    for identity in ("hostname", "subdomain"):  # the source pods' DNS names, not the copies'
        pod["spec"].pop(identity, None)
    container = next(c for c in pod["spec"]["containers"] if c.get("name") == source.container)
    args = args_running(without_speculative([str(a) for a in container.get("args") or []]), config)
    container["args"] = args
    argv = [str(a) for a in container.get("command") or []] + args
    engine_argv_guard.check_engine_argv(argv, role, config)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": child_name(owner.name, role),
            "namespace": owner.namespace,
            "labels": dict(
                sorted({**deployment_labels, CONFIG_LABEL: fingerprint_of(config)}.items())
            ),
            "ownerReferences": [owner.reference()],
        },
        "spec": {
            "replicas": 1,
            "revisionHistoryLimit": 3,
            "progressDeadlineSeconds": spec.engine.startup_timeout_seconds
            + DEPLOYMENT_PROGRESS_SLACK_SECONDS,
            "selector": {"matchLabels": {ROLLOUT_LABEL: owner.name, ROLE_LABEL: role.value}},
            "strategy": engine_pod.shadow_strategy(),
            "template": pod,
        },
    }
