"""Render a rollout's children (engine Deployments and Services) from jinja2 templates.

Pure and byte-stable, so server-side apply of an unchanged rollout is a no-op and snapshots
can pin the output; StrictUndefined and JSON-emitted values, so no user string alters the
document. Owns the children's labels (rollout, role, config fingerprint, serving).
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import jinja2
import yaml

from specdecode.adapters import engine_argv_guard, engine_pod
from specdecode.api.rollout import API_VERSION, KIND, SpecDecodeRolloutSpec
from specdecode.api.spec_evidence import engine_digest
from specdecode.domain.child_names import child_name
from specdecode.domain.decision import DesiredChildren
from specdecode.domain.observations import ChildRole
from specdecode.speculative_document import RunnableConfig, fingerprint_of

ROLLOUT_LABEL = "specdecode.io/rollout"
ROLE_LABEL = "specdecode.io/role"
CONFIG_LABEL = "specdecode.io/config"
SERVING_LABEL = "specdecode.io/serving"
# On the Deployment, not its pods (a new value rolls nothing by itself): the engine the
# spec described when it was rendered (`spec_evidence.engine_digest`), so a restarted analysis
# waits for shadows on the edited engine instead of taking the cached old ones as ready.
EVIDENCE_LABEL = "specdecode.io/evidence"
SPECULATIVE_CONFIG_ANNOTATION = "specdecode.io/speculative-config"
# Slack beyond the engine's own startup timeout for scheduling and pulling a large image,
# before the Deployment reports ProgressDeadlineExceeded.
DEPLOYMENT_PROGRESS_SLACK_SECONDS = 600


@dataclass(frozen=True)
class Owner:
    """What children are named and labelled after, and the object that owns them.

    For a rollout both are the rollout. A tuning's trial names its children after the
    trial (`<trial>-baseline`, `<trial>-candidate`, labelled `specdecode.io/rollout:
    <trial>`) while the tuning owns them: `kind` and `owner_name` say so.
    """

    name: str
    namespace: str
    uid: str
    kind: str = KIND
    owner_name: str | None = None  # the owning object's name when it differs from `name`

    def reference(self) -> dict[str, Any]:
        """The controller owner reference: deleting the owner deletes every child."""
        return {
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "name": self.owner_name or self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


def render_children(
    rollout_name: str,
    namespace: str,
    uid: str,
    spec: SpecDecodeRolloutSpec,
    desired: DesiredChildren,
) -> list[dict[str, Any]]:
    """Every child that should exist: production, then baseline and candidate if shadowed.

    Each role yields its Deployment, then its Service.
    """
    owner = Owner(rollout_name, namespace, uid)
    templates = template_environment()
    roles: list[tuple[ChildRole, RunnableConfig | None, bool]] = [
        (ChildRole.PRODUCTION, desired.production, True)
    ]
    if desired.shadows:
        roles += [
            (ChildRole.BASELINE, desired.baseline, False),
            (ChildRole.CANDIDATE, desired.candidate, desired.live_canary),
        ]
    children: list[dict[str, Any]] = []
    for role, config, serving in roles:
        children.append(render_engine(templates, owner, spec, role, config, serving=serving))
        children.append(
            render_template(templates, "service.yaml.j2", service_context(owner, spec, role))
        )
    return children


def common_labels(rollout_name: str, role: ChildRole) -> dict[str, str]:
    """Labels on every child object and pod."""
    return {
        "app.kubernetes.io/instance": rollout_name,
        "app.kubernetes.io/managed-by": "specdecode-operator",
        "app.kubernetes.io/name": "vllm",
        ROLE_LABEL: role.value,
        ROLLOUT_LABEL: rollout_name,
    }


NAME_LABEL = "app.kubernetes.io/name"


def shadow_labels(rollout_name: str, role: ChildRole, adopted: bool = False) -> dict[str, str]:
    """The labels of a shadow pod, but its config fingerprint: what a Service could
    select it by. A copy of a Deployment another tool owns (`adopted`) goes without
    `app.kubernetes.io/name: vllm`, a selector a router or an InferencePool may well use."""
    labels = {**common_labels(rollout_name, role), SERVING_LABEL: "false"}
    if adopted:
        del labels[NAME_LABEL]
    return labels


def render_engine(
    templates: jinja2.Environment,
    owner: Owner,
    spec: SpecDecodeRolloutSpec,
    role: ChildRole,
    config: RunnableConfig | None,
    *,
    serving: bool,
) -> dict[str, Any]:
    """One engine Deployment, its argv checked as vLLM will read it (`engine_argv_guard`):
    rendering raises rather than emit a baseline that speculates or an engine without stats."""
    labels = common_labels(owner.name, role)
    fingerprint = fingerprint_of(config)
    production = role is ChildRole.PRODUCTION
    port = spec.engine.port
    startup_period, startup_failures = engine_pod.startup_probe_timing(
        spec.engine.startup_timeout_seconds
    )
    values = {
        "name": child_name(owner.name, role),
        "object_namespace": owner.namespace,
        "labels": _sorted(
            {**labels, CONFIG_LABEL: fingerprint, EVIDENCE_LABEL: engine_digest(spec)}
        ),
        "owner_references": [owner.reference()],
        "replicas": spec.serving.replicas if production else 1,
        "progress_deadline_seconds": spec.engine.startup_timeout_seconds
        + DEPLOYMENT_PROGRESS_SLACK_SECONDS,
        "selector": _sorted({ROLLOUT_LABEL: owner.name, ROLE_LABEL: role.value}),
        "strategy": engine_pod.production_strategy(spec.serving.replicas)
        if production
        else engine_pod.shadow_strategy(),
        "pod_labels": _sorted(
            {**labels, CONFIG_LABEL: fingerprint, SERVING_LABEL: "true" if serving else "false"}
        ),
        "pod_annotations": _sorted(
            {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": str(port),
                "prometheus.io/path": "/metrics",
                SPECULATIVE_CONFIG_ANNOTATION: "" if config is None else config.to_cli_json(),
            }
        ),
        "node_selector": engine_pod.node_selector(spec),
        "tolerations": engine_pod.tolerations(spec),
        "image": spec.engine.image,
        "image_pull_policy": spec.engine.image_pull_policy,
        "args": engine_pod.engine_args(spec, config),
        "port": port,
        "env": engine_pod.engine_env(spec),
        "resources": engine_pod.engine_resources(spec),
        "startup_period_seconds": startup_period,
        "startup_failure_threshold": startup_failures,
        "model_cache": spec.engine.model_cache,
    }
    deployment = render_template(templates, "deployment.yaml.j2", values)
    engine_argv_guard.check_engine_argv(engine_argv_guard.container_args(deployment), role, config)
    return deployment


def service_context(owner: Owner, spec: SpecDecodeRolloutSpec, role: ChildRole) -> dict[str, Any]:
    """Template values of one engine Service.

    Production selects the serving label (production pods, plus candidate pods during a
    live canary); a shadow Service selects exactly its role.
    """
    if role is ChildRole.PRODUCTION:
        selector = {ROLLOUT_LABEL: owner.name, SERVING_LABEL: "true"}
    else:
        selector = {ROLLOUT_LABEL: owner.name, ROLE_LABEL: role.value}
    return {
        "name": child_name(owner.name, role),
        "object_namespace": owner.namespace,
        "labels": _sorted(common_labels(owner.name, role)),
        "owner_references": [owner.reference()],
        "selector": _sorted(selector),
        "port": spec.engine.port,
    }


def _sorted(mapping: dict[str, str]) -> dict[str, str]:
    return dict(sorted(mapping.items()))


def _to_json(value: Any) -> str:
    """The template filter `j`: a value as compact JSON (valid YAML in flow style)."""
    if isinstance(value, jinja2.Undefined):
        str(value)  # StrictUndefined raises here, naming the missing value
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


@functools.cache
def template_environment() -> jinja2.Environment:
    """The process's one template environment: strict about undefined values, never
    HTML-escaping. Shared, so each template is compiled once, not on every reconcile
    (compiling was most of a reconcile's CPU), and never re-read: the templates ship in
    the package and do not change while it runs."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("specdecode.adapters", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.globals.clear()  # a value the caller forgot must fail, not resolve to a jinja global
    env.filters["j"] = _to_json
    return env


# libyaml's safe loader where PyYAML was built with it (the wheels are): ~10x the pure one.
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def render_template(
    env: jinja2.Environment, template: str, values: dict[str, Any]
) -> dict[str, Any]:
    document = yaml.load(env.get_template(template).render(values), Loader=SAFE_LOADER)
    if not isinstance(document, dict):
        raise TypeError(f"template {template} did not render a mapping")
    return document
