"""GET /version of a rollout's ready engine pods: which vLLM release really runs.

This is the operator's only request to an engine, and it carries no inference: vLLM's
`/version` answers `{"version": "0.33.0"}` from the API server process (the simulator
answers the same shape). A pod that does not answer (restarting, network policy) is left
out: unknown is not a mismatch.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import httpx

from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.render import ROLE_LABEL, ROLLOUT_LABEL
from specdecode.domain.engine_version import RunningVersion
from specdecode.domain.observations import ChildRole

VERSION_TIMEOUT_SECONDS = 2.0


class EngineVersionSource(Protocol):
    """Where the running releases come from (a fake in tests)."""

    async def running_versions(
        self, namespace: str, rollout: str, port: int
    ) -> list[RunningVersion]:
        """The release each ready engine pod of the rollout reports, to compare with the
        release its config was validated for."""
        ...


class HttpEngineVersions:
    """Lists the rollout's engine pods and asks each ready one for /version."""

    def __init__(
        self, kube: KubeClients, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._kube = kube
        self._transport = transport  # tests answer /version without a network

    async def running_versions(
        self, namespace: str, rollout: str, port: int
    ) -> list[RunningVersion]:
        """See `EngineVersionSource`."""
        pods = await asyncio.to_thread(self._ready_engine_pods, namespace, rollout)
        timeout = httpx.Timeout(VERSION_TIMEOUT_SECONDS)
        async with httpx.AsyncClient(timeout=timeout, transport=self._transport) as client:
            answers = await asyncio.gather(*(_version(client, name, ip, port) for name, ip in pods))
        return [answer for answer in answers if answer is not None]

    def _ready_engine_pods(self, namespace: str, rollout: str) -> list[tuple[str, str]]:
        selector = f"{ROLLOUT_LABEL}={rollout}"
        listed: Any = self._kube.core.list_namespaced_pod(namespace, label_selector=selector)
        roles = {role.value for role in ChildRole}
        pods: list[Any] = listed.items
        return [
            (pod.metadata.name, pod.status.pod_ip)
            for pod in pods
            if _labels(pod).get(ROLE_LABEL) in roles
            and pod.status is not None
            and pod.status.pod_ip
            and _ready(pod)
        ]


def _labels(pod: Any) -> dict[str, str]:
    labels: dict[str, str] = (pod.metadata.labels if pod.metadata else None) or {}
    return labels


def _ready(pod: Any) -> bool:
    conditions = pod.status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


async def _version(
    client: httpx.AsyncClient, name: str, ip: str, port: int
) -> RunningVersion | None:
    try:
        response = await client.get(f"http://{ip}:{port}/version")
        version = response.json().get("version") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return RunningVersion(name, version) if isinstance(version, str) else None
