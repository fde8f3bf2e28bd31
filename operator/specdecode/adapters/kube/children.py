"""The engine Deployments and Services a rollout owns: observe, apply, prune.

Observation reads the watched cache (`cache.ClusterView`), never the API server: the
Deployments and their pods become `ChildState` values, including the scheduler's and
kubelet's reasons, which become the rollout's "why".

Writes go only to objects the operator owns (`apply_children`): another object of a
child's name is left as it is and reported, so a user's Service is never rewritten,
adopted or garbage-collected. They happen only where the cache differs from the rendered
objects: `covers` says whether an observed object already holds every field the operator
renders (the API server adds defaults, so "holds" is a subset test with quantities
compared by value).
A child deleted or edited by hand therefore differs, and its watch event triggers the
reconcile that restores it; an unchanged rollout sends nothing. Shadows the domain no
longer wants are deleted only if the cache says they exist.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from kubernetes.client import ApiException
from kubernetes.utils import parse_quantity

from specdecode.adapters.kube.cache import JsonObject, labels_of, named
from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.render import CONFIG_LABEL, ROLE_LABEL, child_name
from specdecode.domain.observations import ChildRole, ChildState

SHADOW_ROLES = (ChildRole.BASELINE, ChildRole.CANDIDATE)


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


@dataclass(frozen=True)
class ForeignObject:
    """An object named like a child that the operator does not own: left untouched."""

    kind: str
    namespace: str
    name: str

    def message(self) -> str:
        """What the rollout's Degraded condition says, and how to resolve it."""
        return (
            f"{self.kind} {self.namespace}/{self.name} already exists and is not owned by this "
            "rollout (no ownerReference to it), so the operator leaves it untouched: rename "
            f"the rollout, or delete the {self.kind} if nothing else uses it"
        )


def owner_uids(obj: Mapping[str, Any]) -> set[str]:
    """The uids of an object's ownerReferences."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return {str(ref.get("uid")) for ref in refs}


async def apply_children(
    clients: KubeClients,
    objects: Sequence[dict[str, Any]],
    manager: str,
    observed: Iterable[JsonObject] = (),
) -> list[ForeignObject]:
    """Apply each object (the caller passes only stale ones, and what the cache shows), all
    at once, each in a worker thread: a new rollout's Deployments and Services do not wait
    in line. Only objects the operator owns are changed; the others are returned.

    Owned means an ownerReference to the uid the rendered object names. The cache watches
    only labelled objects, so an absent child may still exist: a dry-run create asks
    first (`_name_is_free`), and only a taken name costs one GET, to tell our own (the
    watch lags) from somebody else's.
    """
    by_name = {(o.get("kind"), (o.get("metadata") or {}).get("name")): o for o in observed}
    found = await asyncio.gather(
        *(
            asyncio.to_thread(
                _apply_owned, clients, obj, manager, by_name.get((obj["kind"], _name(obj)))
            )
            for obj in objects
        )
    )
    return [foreign for foreign in found if foreign is not None]


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def _apply_owned(
    clients: KubeClients, obj: dict[str, Any], manager: str, cached: JsonObject | None
) -> ForeignObject | None:
    ours = owner_uids(obj)
    foreign = ForeignObject(obj["kind"], obj["metadata"]["namespace"], _name(obj))
    if cached is not None:
        if not ours & owner_uids(cached):
            return foreign
        clients.server_side_apply(obj, manager)
        return None
    if _name_is_free(clients, obj):
        clients.server_side_apply(obj, manager, force=False)
        return None
    existing = _read_owner_uids(clients, foreign)
    if existing is not None and not ours & existing:
        return foreign
    clients.server_side_apply(obj, manager)  # ours, created before the watch told us
    return None


def _name_is_free(clients: KubeClients, obj: dict[str, Any]) -> bool:
    """Whether no object of this kind and name exists: a dry-run create (nothing is stored,
    nothing is changed; AlreadyExists says it is taken).

    Why not create for real: a created object's fields would belong to an Update, which a
    later apply can never prune. Why not apply without force at once: it would add our
    fields to somebody else's object wherever they do not conflict (labels, the
    ownerReference). What is left is a race of the dry run's round trip: an object created
    by someone else in between is applied to without force (conflicting fields refused).
    """
    namespace, body = obj["metadata"]["namespace"], cast(Any, obj)
    try:
        if obj["kind"] == "Deployment":
            clients.apps.create_namespaced_deployment(namespace, body, dry_run="All")
        else:
            clients.core.create_namespaced_service(namespace, body, dry_run="All")
    except ApiException as error:
        if error.status == 409:
            return False
        raise
    return True


def _read_owner_uids(clients: KubeClients, child: ForeignObject) -> set[str] | None:
    """The ownerReference uids of the named Deployment or Service; None if absent."""
    found: Any
    try:
        if child.kind == "Deployment":
            found = clients.apps.read_namespaced_deployment(child.name, child.namespace)
        else:
            found = clients.core.read_namespaced_service(child.name, child.namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return {str(ref.uid) for ref in found.metadata.owner_references or []}


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
            detail = f" (exit code {last.get('exitCode')}: {text})"
        return (
            f"pod {_pod_name(pod)} container {container.get('name')} is crash-looping after "
            f"{container.get('restartCount', 0)} restarts{detail}"
        )[:1000]
    return None
