"""Where an engine role's ready pods answer: read from the watched pod cache, not listed.

Why pod addresses: the shadow driver needs no kube-proxy and spreads load itself. The
addresses are those the role's Service would list as ready; the pods are already watched
and a pod's change wakes the rollout, so this costs no request. More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from specdecode.adapters.render import ROLE_LABEL
from specdecode.domain.observations import ChildRole


def ready_engine_endpoints(
    pods: Iterable[Mapping[str, Any]], role: ChildRole, port: int
) -> list[str]:
    """Base URLs (`http://ip:port`, IPv6 in brackets) of the role's ready pods, sorted."""
    urls = {
        f"http://{_host(pod)}:{port}"
        for pod in pods
        if _labels(pod).get(ROLE_LABEL) == role.value and _serving(pod)
    }
    return sorted(urls)


def _labels(pod: Mapping[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = (pod.get("metadata") or {}).get("labels") or {}
    return labels


def _serving(pod: Mapping[str, Any]) -> bool:
    """Has an address, is Ready, is not terminating: an EndpointSlice's ready endpoint."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return ready and bool(status.get("podIP"))


def _host(pod: Mapping[str, Any]) -> str:
    address = str((pod.get("status") or {}).get("podIP"))
    return f"[{address}]" if ":" in address else address
