"""Publishing one pod's state: its API status, its Prometheus target and its state.json.

Each is written only when it changed, so an idle pod costs no API requests.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from .container import ContainerRunner
from .kubeapi import MERGE, ApiError, KubeRest
from .podstatus import ConditionClock, PodAddresses, pod_status
from .promsd import TargetFile, target_group
from .state import write_state

log = logging.getLogger(__name__)


class PodGone(Exception):
    """The API server says the pod object no longer exists (or is another pod by now)."""


class PodReporter:
    """Remembers what was last published for one pod and publishes changes."""

    def __init__(
        self,
        api: KubeRest,
        targets: TargetFile,
        addresses: PodAddresses,
        identity: dict[str, str],
    ) -> None:
        self._api = api
        self._targets = targets
        self.addresses = addresses
        self._identity = identity  # uid, namespace, name, node
        self._clock = ConditionClock()
        self._last_status: dict[str, Any] | None = None
        self._last_state: dict[str, Any] | None = None

    def report(
        self,
        pod: dict[str, Any],
        inits: list[ContainerRunner],
        mains: list[ContainerRunner],
        pod_dir: Path,
    ) -> str:
        """Publish status, target and state; return the phase. Raises PodGone."""
        restart_policy = str(pod["spec"].get("restartPolicy", "Always"))
        status = pod_status(
            restart_policy,
            [r.view() for r in inits],
            [r.view() for r in mains],
            self.addresses,
            self._clock,
        )
        managed = {c["type"] for c in status["conditions"]}
        foreign = [
            c
            for c in (pod.get("status") or {}).get("conditions") or []
            if c.get("type") not in managed
        ]
        status["conditions"] = foreign + status["conditions"]
        if status != self._last_status:
            self._patch_status(status)
        running = any(r.process is not None for r in mains)
        group = target_group(pod, self.addresses.pod_ip) if running else None
        self._targets.set(self._identity["uid"], group)
        self.save_state(inits, mains, pod_dir)
        return str(status["phase"])

    def withdraw_target(self) -> None:
        """The pod stops serving: drop its scrape target."""
        self._targets.set(self._identity["uid"], None)

    def save_state(
        self, inits: list[ContainerRunner], mains: list[ContainerRunner], pod_dir: Path
    ) -> None:
        """Write state.json if anything in it changed."""
        state = {
            **self._identity,
            "pod_ip": self.addresses.pod_ip,
            "main_containers": [r.name for r in mains],
            "containers": {r.name: r.state_record() for r in inits + mains},
        }
        if state != self._last_state:
            write_state(pod_dir, state)
            self._last_state = state

    def _patch_status(self, status: dict[str, Any]) -> None:
        """Merge-patch the status (lists are replaced whole, so container states are exact);
        the uid in the body makes the server refuse a same-named successor pod."""
        namespace, name = self._identity["namespace"], self._identity["name"]
        try:
            self._api.call(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                body={"metadata": {"uid": self._identity["uid"]}, "status": status},
                content_type=MERGE,
            )
            self._last_status = status
        except ApiError as error:
            if error.status in (404, 409):
                raise PodGone(f"{namespace}/{name}") from error
            log.warning("status update for %s/%s failed: %s", namespace, name, error)
        except Exception as error:  # the next tick retries
            log.warning("status update for %s/%s failed: %s", namespace, name, error)
