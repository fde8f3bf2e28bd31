"""A Deployment another tool owns, read as the production a rollout judges (`workloadRef`).

Pure: from the Deployment and the namespace's Services to a `SourceObservation` (argv read
as vLLM reads it, speculative config, readiness, template hash, labels shadows must drop).
Why labels are dropped and checked: labels are routing, and a shadow a Service selects
would receive live traffic. Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from specdecode.adapters.render import ROLLOUT_LABEL, shadow_labels
from specdecode.adapters.source_facts import DEFAULT_PORT, argv_of, model_tag, vllm_container
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.engine_args import hits_of, last_value, reserved_set_by, without_speculative
from specdecode.api.engine_flag_classes import FlagClass
from specdecode.api.speculative import SpeculativeConfig, fingerprint_of
from specdecode.domain.observations import SHADOW_ROLES, ChildState
from specdecode.domain.source import SourceObservation


def speculative_of(argv: Sequence[str]) -> SpeculativeConfig | str | None:
    """The speculative config `argv` runs (None: plain decoding), or why it is unreadable.
    vLLM merges `--spec-method`, `--spec-model` and `--spec-tokens` into the config, so an
    argv that speculates through them is not read (a clear problem, never plain decoding)."""
    hits = hits_of(argv, FlagClass.SPECULATIVE)
    if not hits:
        return None
    shorthand = [  # --spec-method and the like, or a prefix vLLM finds ambiguous (--spec)
        h.arg for h in hits if any(r.dest != "speculative_config" for r in reserved_set_by(h.arg))
    ]
    if shorthand:
        return (
            f"its vLLM argv sets the speculative config through {shorthand}, which vLLM "
            "merges into it: write it as one JSON --speculative-config"
        )
    hit = hits[-1]
    value = hit.arg.split("=", 1)[1] if "=" in hit.arg else None
    if value is None and hit.index + 1 < len(argv) and "." not in hit.arg:
        value = argv[hit.index + 1]
    if value is None:
        return f"{hit.arg!r}: only a JSON --speculative-config can be read"
    try:
        return SpeculativeConfig.model_validate(json.loads(value))
    except (ValueError, ValidationError) as error:
        return f"--speculative-config {value[:120]!r} is not readable: {str(error)[:200]}"


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a Service-style selector (non-empty) selects pods with `labels`."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def routing_keys(
    pod_labels: Mapping[str, str], own_selector: Mapping[str, Any], services: Iterable[Any]
) -> dict[str, str]:
    """Label key -> who selects on it: the source's selector, and every Service that
    selects the source's pods."""
    keys = {key: "the source's selector" for key in own_selector.get("matchLabels") or {}}
    for expression in own_selector.get("matchExpressions") or []:
        keys[str(expression.get("key"))] = "the source's selector"
    for service in services:
        selector = (service.get("spec") or {}).get("selector") or {}
        if selects(selector, pod_labels):
            for key in selector:
                keys.setdefault(key, f"Service {(service.get('metadata') or {}).get('name')}")
    return keys


def selecting_service(
    labels: Mapping[str, str], services: Iterable[Any], rollout: str
) -> str | None:
    """A Service other than the rollout's own that would select pods with `labels`."""
    for service in services:
        selector = (service.get("spec") or {}).get("selector") or {}
        if selector.get(ROLLOUT_LABEL) == rollout:
            continue  # the rollout's own shadow Services
        if selects(selector, labels):
            return str((service.get("metadata") or {}).get("name"))
    return None


# Annotation prefixes by which a mesh registers a pod to receive traffic (Dapr's app id,
# Consul's and Kuma's service), a restart stamp (not the pods' content) and the scrape
# annotations the operator sets itself: not copied. Everything else is (sidecar injection
# opt-outs, CSI sidecars such as gcsfuse, Vault agents: the copy must run as the source).
NOT_COPIED = (
    "dapr.io/",
    "consul.hashicorp.com/",
    "kuma.io/",
    "kubectl.kubernetes.io/restartedAt",
    "prometheus.io/",
)


def routes(annotation: str) -> bool:
    """Whether a source pod annotation stays off the copies (`NOT_COPIED`)."""
    return annotation.startswith(NOT_COPIED)


def template_hash(template: Mapping[str, Any]) -> str:
    """A short hash of the pod template as the shadows copy it: without the annotations
    they do not carry (so `kubectl rollout restart`, which only stamps one, does not
    restart an analysis)."""
    metadata = dict(template.get("metadata") or {})
    annotations = metadata.get("annotations") or {}
    metadata["annotations"] = {k: v for k, v in annotations.items() if not routes(k)}
    text = json.dumps({**template, "metadata": metadata}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def source_state(
    deployment: Mapping[str, Any], speculative: SpeculativeConfig | None
) -> ChildState:
    """The source as production: ready when its rollout is complete on the current template,
    as `kubectl rollout status` says it: observed, every replica updated, none of an older
    template left (their ready pods would count as ready), every updated one ready."""
    status = deployment.get("status") or {}
    metadata = deployment.get("metadata") or {}
    observed = (status.get("observedGeneration") or 0) >= (metadata.get("generation") or 0)
    old_left = (status.get("replicas") or 0) > (status.get("updatedReplicas") or 0)
    current = observed and not old_left
    replicas = (deployment.get("spec") or {}).get("replicas")
    return ChildState(  # scaled to 0 it runs nothing: not ready, never Verified
        exists=True,
        config_fingerprint=fingerprint_of(speculative),
        desired_replicas=max(1, 1 if replicas is None else int(replicas)),
        ready_replicas=(status.get("readyReplicas") or 0) if current else 0,
        updated_replicas=(status.get("updatedReplicas") or 0) if current else 0,
    )


def observe_source(
    rollout: str,
    spec: SpecDecodeRolloutSpec,
    deployment: Mapping[str, Any] | None,
    services: Iterable[Any],
) -> SourceObservation:
    """What the domain needs of the source, or why it cannot be judged (`problem`)."""
    ref = spec.workload_ref
    assert ref is not None
    name = f"Deployment/{ref.name}"
    if deployment is None:
        return SourceObservation(name, problem=f"{name} not found in the rollout's namespace")
    template = (deployment.get("spec") or {}).get("template") or {}
    container = vllm_container(template, ref.container)
    if isinstance(container, str):
        return SourceObservation(name, problem=f"{name}: {container}")
    problem, speculative = _check(spec, container, template.get("spec") or {})
    if problem is not None or isinstance(speculative, str):
        return SourceObservation(name, problem=f"{name}: {problem or speculative}")
    services = list(services)
    pod_labels = (template.get("metadata") or {}).get("labels") or {}
    selector = (deployment.get("spec") or {}).get("selector") or {}
    routing = routing_keys(pod_labels, selector, services)
    refused = [f"{key} ({routing[key]} selects on it)" for key in ref.keep_labels if key in routing]
    if refused:
        problem = f"{name}: workloadRef.keepLabels: {', '.join(refused)}"
        return SourceObservation(name, problem=problem)
    kept = {k: v for k, v in pod_labels.items() if k in ref.keep_labels}
    for role in SHADOW_ROLES:
        labels = {**kept, **shadow_labels(rollout, role, adopted=True)}
        service = selecting_service(labels, services, rollout)
        if service is not None:
            return SourceObservation(
                name, problem=f"Service {service} would select the {role.value} shadow's pods"
            )
    return SourceObservation(
        name,
        state=source_state(deployment, speculative),
        speculative=setting_of(speculative),
        template_hash=template_hash(template),
        dropped_labels=tuple(sorted(set(pod_labels) - set(kept))),
        container=str(container.get("name")),
        base_args=tuple(without_speculative([str(a) for a in container.get("args") or []])),
    )


def _check(
    spec: SpecDecodeRolloutSpec, container: Mapping[str, Any], pod: Mapping[str, Any]
) -> tuple[str | None, SpeculativeConfig | str | None]:
    """A mismatch between the rollout and the source's vLLM container, and its config."""
    argv = argv_of(container)
    refused = hits_of(argv, FlagClass.STATS_OFF, FlagClass.UNJUDGEABLE)
    if refused:
        why = "; ".join(f"{h.arg!r}: {h.reserved.source}" for h in refused)
        return f"its vLLM argv sets {why}: the engines could not be judged", None
    command = [str(a) for a in container.get("command") or []]
    if hits_of(command, FlagClass.SPECULATIVE):
        return "its vLLM command sets the speculative config: only args are swapped", None
    env = {str(e.get("name")) for e in container.get("env") or []}
    if "VLLM_API_KEY" in env:  # not argv: the flag table's api_key covers --api-key
        return "it requires an API key (VLLM_API_KEY): load pods send none", None
    host_ports = [p for c in pod.get("containers") or [] for p in c.get("ports") or []]
    if pod.get("hostNetwork") or any(p.get("hostPort") for p in host_ports):
        return "its pods use the host's network or ports, which a copy would share", None
    wanted = {
        "model.name": (spec.model.name, model_tag(argv)),
        "model.servedModelName": (
            spec.model.served_name,
            last_value(argv, "--served-model-name") or model_tag(argv),
        ),
        "engine.image": (spec.engine.image, container.get("image")),
        "engine.port": (str(spec.engine.port), last_value(argv, "--port") or str(DEFAULT_PORT)),
    }
    for field, (ours, theirs) in wanted.items():
        if ours != theirs:
            return f"spec.{field} is {ours!r} but the source runs {theirs!r}", None
    return None, speculative_of(argv)


@dataclass(frozen=True)
class Source:
    """The source as observed, and its pod template (what shadows are copies of)."""

    observation: SourceObservation
    template: Mapping[str, Any]
    generation: int = 0

    @property
    def judged(self) -> bool:
        """Whether it can be judged (no problem found)."""
        return self.observation.problem is None


def production_deployment(rollout: str, spec: SpecDecodeRolloutSpec) -> str:
    """The Deployment production runs as: the source, else the rollout's own `<name>`."""
    return spec.workload_ref.name if spec.workload_ref is not None else rollout
