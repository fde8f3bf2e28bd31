"""The engine Deployments and Services a rollout owns: observe, apply, prune.

Observation reads the watched cache, never the API server; writes go only to owned
objects and only where the cache differs from the rendered ones (`covers`), so a hand edit
is restored on its watch event and an unchanged rollout sends nothing.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubernetes.client import ApiException
from kubernetes.utils import parse_quantity

from specdecode.adapters.kube.cache import JsonObject, labels_of, named
from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.kube.owned import owner_uids
from specdecode.adapters.render import CONFIG_LABEL, EVIDENCE_LABEL, ROLE_LABEL
from specdecode.domain.child_names import child_name
from specdecode.domain.observations import SHADOW_ROLES, ChildRole, ChildState

# A line of a crashed engine's log that names the cause: an exception (`ValueError: ...`)
# or a pydantic validation message (`  Value error, ...`, as vLLM's config classes raise).
_ERROR_LINE = re.compile(r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception)\b|Value error, )")


def covers(observed: Any, desired: Any) -> bool:
    """Whether `observed` already holds every value of `desired` (a rendered object).

    Mappings: each desired key present and covered (extra observed keys are the API
    server's defaults and status). Lists: same length, covered element by element.
    Scalars: equal, equal as text (the API server turns `1` into "1" for quantities), or
    equal as Kubernetes quantities ("1000m" and "1"). A desired None is "unset".
    """
    if desired is None:
        return observed is None
    if isinstance(desired, Mapping):
        if not isinstance(observed, Mapping):
            return False
        return all(covers(observed.get(key), value) for key, value in desired.items())
    if isinstance(desired, list):
        if not isinstance(observed, list) or len(observed) != len(desired):
            return False
        return all(covers(o, d) for o, d in zip(observed, desired, strict=True))
    if isinstance(desired, bool) or isinstance(observed, bool):
        return observed is desired
    if observed is None:
        return False
    return observed == desired or str(observed) == str(desired) or _same_quantity(observed, desired)


def _same_quantity(observed: Any, desired: Any) -> bool:
    try:
        return bool(parse_quantity(observed) == parse_quantity(desired))
    except (ValueError, TypeError, ArithmeticError):
        return False


def stale_objects(
    rendered: Iterable[dict[str, Any]], observed: Iterable[JsonObject]
) -> list[dict[str, Any]]:
    """The rendered objects that are absent from, or differ from, the observed ones."""
    by_kind_name = {(o.get("kind"), (o.get("metadata") or {}).get("name")): o for o in observed}
    stale = []
    for obj in rendered:
        current = by_kind_name.get((obj["kind"], obj["metadata"]["name"]))
        if current is None or not covers(current, obj):
            stale.append(obj)
    return stale


def shadows_to_delete(
    rollout: str,
    deployments: Iterable[JsonObject],
    services: Iterable[JsonObject],
    owner_uid: str | None = None,
) -> list[tuple[str, str]]:
    """("Deployment" | "Service", name) of every shadow child the cache says exists and
    is not already being deleted; with `owner_uid`, only those it owns."""
    deployments, services = list(deployments), list(services)
    doomed = []
    for role in SHADOW_ROLES:
        name = child_name(rollout, role)
        for kind, objects in (("Deployment", deployments), ("Service", services)):
            obj = named(objects, name)
            if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue
            if owner_uid is None or owner_uid in owner_uids(obj):
                doomed.append((kind, name))
    return doomed


def delete_children(clients: KubeClients, namespace: str, doomed: Sequence[tuple[str, str]]) -> int:
    """Delete the named children (a 404 means another hand was faster); how many."""
    for kind, name in doomed:
        try:
            if kind == "Deployment":
                clients.apps.delete_namespaced_deployment(
                    name, namespace, propagation_policy="Background"
                )
            else:
                clients.core.delete_namespaced_service(name, namespace)
        except ApiException as error:
            if error.status != 404:
                raise
    return len(doomed)


def observe_children(
    deployments: Iterable[JsonObject], pods: Iterable[JsonObject]
) -> dict[ChildRole, ChildState]:
    """Each child Deployment's readiness, config, and its pods' blocking reasons."""
    pods = list(pods)
    roles = {r.value for r in ChildRole}
    states: dict[ChildRole, ChildState] = {}
    for deployment in deployments:
        role_value = labels_of(deployment).get(ROLE_LABEL)
        if role_value not in roles:
            continue
        role = ChildRole(role_value)
        role_pods = [p for p in pods if labels_of(p).get(ROLE_LABEL) == role.value]
        states[role] = _child_state(deployment, role_pods)
    return states


def _child_state(deployment: JsonObject, pods: list[JsonObject]) -> ChildState:
    status = deployment.get("status") or {}
    spec = deployment.get("spec") or {}
    metadata = deployment.get("metadata") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    current = (status.get("observedGeneration") or 0) >= (metadata.get("generation") or 0)
    fingerprint = template_labels.get(CONFIG_LABEL)
    live_pods = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    current_pods = [p for p in live_pods if labels_of(p).get(CONFIG_LABEL) == fingerprint]
    return ChildState(
        exists=True,
        config_fingerprint=fingerprint,
        desired_replicas=spec.get("replicas") or 0,
        ready_replicas=(status.get("readyReplicas") or 0) if current else 0,
        updated_replicas=(status.get("updatedReplicas") or 0) if current else 0,
        unschedulable_reason=_first(_unschedulable(p) for p in current_pods),
        crash_reason=_first(_crashing(p) for p in current_pods),
        evidence=labels_of(deployment).get(EVIDENCE_LABEL),
    )


def _first(reasons: Iterable[str | None]) -> str | None:
    return next((r for r in reasons if r), None)


def _pod_name(pod: JsonObject) -> str:
    return str((pod.get("metadata") or {}).get("name"))


def _unschedulable(pod: JsonObject) -> str | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            why = condition.get("message") or condition.get("reason")
            return f"pod {_pod_name(pod)} unschedulable: {why}"
    return None


def error_line(log_tail: str) -> str | None:
    """The last line of a crash's log tail that names its cause, if one does.

    Why: the terminated state's message is the log's last ~2 KB (FallbackToLogsOnError), a
    traceback whose cause is its last line or near it (pydantic adds a "For further
    information" line after); the rollout's message has room for ~1,000 characters.
    """
    lines = [line.strip() for line in log_tail.splitlines() if _ERROR_LINE.match(line)]
    return lines[-1] if lines else None


def _crashing(pod: JsonObject) -> str | None:
    """A container in CrashLoopBackOff (it has exited and been restarted at least once)."""
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") != "CrashLoopBackOff":
            continue
        last = (container.get("lastState") or {}).get("terminated")
        detail = ""
        if last:
            text = (last.get("message") or last.get("reason") or "").strip()
            detail = f" (exit code {last.get('exitCode')}: {error_line(text) or text})"
        return (
            f"pod {_pod_name(pod)} container {container.get('name')} is crash-looping after "
            f"{container.get('restartCount', 0)} restarts{detail}"
        )[:1000]
    return None
