"""GET /version of a rollout's ready engine pods: which vLLM release really runs.

The operator's only request to an engine, carrying no inference. A pod's release cannot
change while it lives, so each pod (by uid) is asked until it answers once: an idle
rollout sends nothing, and a pod that does not answer is unknown, not a mismatch.
More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx

from specdecode.adapters.render import ROLE_LABEL
from specdecode.domain.engine_version import RunningVersion
from specdecode.domain.observations import ChildRole

VERSION_TIMEOUT_SECONDS = 2.0
RETRY_SILENT_SECONDS = 60.0
ENGINE_ROLES = frozenset(role.value for role in ChildRole)


class EngineVersions:
    """Asks ready engine pods for /version, remembering each pod's answer by uid, and a
    silent pod's silence for `RETRY_SILENT_SECONDS` (every reconcile asking it again, each
    with a new client, was a busy operator's largest CPU cost after templates; it now uses
    the operator's one client). Kept per rollout: a reconcile sees its own rollout's pods
    only, and must not trim the rest."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._known: dict[str, dict[str, str]] = {}
        self._silent_until: dict[str, dict[str, float]] = {}

    async def running_versions(
        self,
        client: httpx.AsyncClient,
        rollout: str,
        pods: Iterable[Mapping[str, Any]],
        port: int,
    ) -> list[RunningVersion]:
        """The release of each ready engine pod among `pods` (all of one rollout, "namespace/
        name") that answered, now or before. `client`: the operator's shared one."""
        engines = [pod for pod in pods if _is_ready_engine(pod)]
        live = {_uid(pod) for pod in engines}
        now = self._clock()
        known = {uid: v for uid, v in self._known.get(rollout, {}).items() if uid in live}
        silent = {
            uid: t
            for uid, t in self._silent_until.get(rollout, {}).items()
            if uid in live and t > now
        }
        unknown = [pod for pod in engines if _uid(pod) not in known and _uid(pod) not in silent]
        if unknown:
            answers = await asyncio.gather(*(_version(client, pod, port) for pod in unknown))
            for pod, answer in zip(unknown, answers, strict=True):
                if answer is None:
                    silent[_uid(pod)] = now + RETRY_SILENT_SECONDS
                else:
                    known[_uid(pod)] = answer
        self._known[rollout], self._silent_until[rollout] = known, silent
        return [
            RunningVersion(_name(pod), known[_uid(pod)]) for pod in engines if _uid(pod) in known
        ]

    def forget(self, rollout: str) -> None:
        """Drop a deleted rollout's answers."""
        self._known.pop(rollout, None)
        self._silent_until.pop(rollout, None)


def _metadata(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def _uid(pod: Mapping[str, Any]) -> str:
    return str(_metadata(pod).get("uid") or _metadata(pod).get("name"))


def _name(pod: Mapping[str, Any]) -> str:
    return str(_metadata(pod).get("name"))


def _is_ready_engine(pod: Mapping[str, Any]) -> bool:
    labels = _metadata(pod).get("labels") or {}
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return labels.get(ROLE_LABEL) in ENGINE_ROLES and bool(status.get("podIP")) and ready


async def _version(client: httpx.AsyncClient, pod: Mapping[str, Any], port: int) -> str | None:
    ip = (pod.get("status") or {}).get("podIP")
    try:
        response = await client.get(f"http://{ip}:{port}/version", timeout=VERSION_TIMEOUT_SECONDS)
        version = response.json().get("version") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None
