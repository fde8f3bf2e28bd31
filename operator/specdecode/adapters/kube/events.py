"""Kubernetes Events on a rollout, one per transition: named so a repeat is refused.

Why deterministic names: an operator killed between posting and its status write computes
the same transition again; the same name makes the second create AlreadyExists (kopf names
Events randomly). Events of a refused status write are withdrawn (`withdraw_event`).
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.api import API_VERSION, KIND

COMPONENT = "specdecode-operator"


@dataclass(frozen=True)
class EventTarget:
    """The object an Event is about (a rollout, or a tuning), and where its transition
    came from."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    origin: str  # identifies the state the transition was computed from
    kind: str = KIND


def event_name(target: EventTarget, reason: str, position: int) -> str:
    """A name that is the same whenever the same transition is computed again."""
    identity = f"{target.uid}/{target.origin}/{position}/{reason}"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return f"{target.name[:200]}.{digest}"


def post_event(
    clients: KubeClients,
    target: EventTarget,
    position: int,
    event_type: str,
    reason: str,
    message: str,
    instance: str,
    now: datetime | None = None,
) -> bool:
    """Create the Event; False if it already exists (a repeat of a posted transition).

    Only a True answer means this call created it, and so may withdraw it.
    """
    stamp = now or datetime.now(UTC).replace(microsecond=0)
    body = client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=event_name(target, reason, position)),
        involved_object=client.V1ObjectReference(
            api_version=API_VERSION,
            kind=target.kind,
            name=target.name,
            namespace=target.namespace,
            uid=target.uid,
            resource_version=target.resource_version,
        ),
        reason=reason,
        message=message[:1024],
        type=event_type,
        count=1,
        first_timestamp=stamp,
        last_timestamp=stamp,
        source=client.V1EventSource(component=COMPONENT),
        reporting_component=COMPONENT,
        reporting_instance=instance[:128],
    )
    try:
        clients.core.create_namespaced_event(target.namespace, body)
    except ApiException as error:
        if error.status == 409:
            return False
        raise
    return True


def withdraw_event(clients: KubeClients, target: EventTarget, reason: str, position: int) -> None:
    """Delete an Event this attempt created, its transition refused by the status write.

    A repeat of the same transition (from a fresher copy with the same status) creates it
    again under the same name; gone already (404) is what was wanted.
    """
    try:
        clients.core.delete_namespaced_event(event_name(target, reason, position), target.namespace)
    except ApiException as error:
        if error.status != 404:
            raise
