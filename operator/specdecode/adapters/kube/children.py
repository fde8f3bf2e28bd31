"""The engine Deployments and Services a rollout owns: apply, prune, and observe.

Every reconcile re-applies the rendered children with server-side apply, so a child
deleted or edited by hand is restored on the next pass; shadows the domain no longer wants
are deleted by name. Observing reads Deployments and their pods back into `ChildState`
values, including the scheduler's and kubelet's reasons, which become the rollout's "why".
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.render import CONFIG_LABEL, ROLE_LABEL, ROLLOUT_LABEL, child_name
from specdecode.domain.observations import ChildRole, ChildState

SHADOW_ROLES = (ChildRole.BASELINE, ChildRole.CANDIDATE)


def apply_children(clients: KubeClients, objects: list[dict[str, Any]], manager: str) -> None:
    """Server-side apply every rendered object (idempotent; repairs drift)."""
    for obj in objects:
        clients.server_side_apply(obj, manager)


def prune_shadows(clients: KubeClients, namespace: str, rollout: str, keep: bool) -> None:
    """Delete the baseline and candidate Deployments and Services unless they should stay."""
    if keep:
        return
    for role in SHADOW_ROLES:
        name = child_name(rollout, role)
        _delete_ignoring_absent(
            lambda n=name: clients.apps.delete_namespaced_deployment(
                n, namespace, propagation_policy="Background"
            )
        )
        _delete_ignoring_absent(lambda n=name: clients.core.delete_namespaced_service(n, namespace))


def _delete_ignoring_absent(delete: Any) -> None:
    try:
        delete()
    except ApiException as error:
        if error.status != 404:
            raise


def observe_children(
    clients: KubeClients, namespace: str, rollout: str
) -> dict[ChildRole, ChildState]:
    """Each child Deployment's readiness, config, and its pods' blocking reasons."""
    selector = f"{ROLLOUT_LABEL}={rollout}"
    deployments = clients.apps.list_namespaced_deployment(namespace, label_selector=selector)
    pods = clients.core.list_namespaced_pod(namespace, label_selector=selector).items
    states: dict[ChildRole, ChildState] = {}
    for deployment in deployments.items:
        role_value = _labels(deployment).get(ROLE_LABEL)
        if role_value not in {r.value for r in ChildRole}:
            continue
        role = ChildRole(role_value)
        role_pods = [p for p in pods if _labels(p).get(ROLE_LABEL) == role.value]
        states[role] = _child_state(deployment, role_pods)
    return states


def _labels(obj: Any) -> dict[str, str]:
    labels: dict[str, str] = (obj.metadata.labels if obj.metadata else None) or {}
    return labels


def _child_state(deployment: Any, pods: list[Any]) -> ChildState:
    status = deployment.status
    template_labels = deployment.spec.template.metadata.labels or {}
    current = (status.observed_generation or 0) >= (deployment.metadata.generation or 0)
    fingerprint = template_labels.get(CONFIG_LABEL)
    live_pods = [p for p in pods if p.metadata.deletion_timestamp is None]
    current_pods = [
        p for p in live_pods if (p.metadata.labels or {}).get(CONFIG_LABEL) == fingerprint
    ]
    return ChildState(
        exists=True,
        config_fingerprint=fingerprint,
        desired_replicas=deployment.spec.replicas or 0,
        ready_replicas=(status.ready_replicas or 0) if current else 0,
        updated_replicas=(status.updated_replicas or 0) if current else 0,
        unschedulable_reason=_first(_unschedulable(p) for p in current_pods),
        crash_reason=_first(_crashing(p) for p in current_pods),
    )


def _first(reasons: Any) -> str | None:
    return next((r for r in reasons if r), None)


def _unschedulable(pod: Any) -> str | None:
    for condition in pod.status.conditions or []:
        if condition.type == "PodScheduled" and condition.status == "False":
            return f"pod {pod.metadata.name} unschedulable: {condition.message or condition.reason}"
    return None


def _crashing(pod: Any) -> str | None:
    """A container in CrashLoopBackOff (it has exited and been restarted at least once)."""
    for container in pod.status.container_statuses or []:
        waiting = container.state.waiting if container.state else None
        if waiting is None or waiting.reason != "CrashLoopBackOff":
            continue
        last = container.last_state.terminated if container.last_state else None
        detail = ""
        if last is not None:
            detail = f" (exit code {last.exit_code}: {(last.message or last.reason or '').strip()})"
        return (
            f"pod {pod.metadata.name} container {container.name} is crash-looping after "
            f"{container.restart_count} restarts{detail}"
        )[:1000]
    return None
