"""List-then-watch of the pods bound to one node, feeding a PodSink.

Each (re)list hands the sink the node's full pod set, so pods deleted while the watch was
down are noticed; watch events then deliver changes. Errors re-list after a short pause.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from .kubeapi import ApiError, KubeRest

WATCH_SECONDS = 240
RETRY_SECONDS = 1.0
log = logging.getLogger(__name__)


class PodSink(Protocol):
    """Receiver of one node's pods."""

    def replace_node_pods(self, node: str, pods: list[dict[str, Any]]) -> None:
        """Full set after a list, so pods missing from it are known to be gone."""

    def upsert(self, pod: dict[str, Any]) -> None:
        """A pod was added or changed; the sink starts or updates its worker."""

    def remove(self, pod: dict[str, Any]) -> None:
        """A pod object was deleted; its processes must go."""


def list_node_pods(api: KubeRest, node: str) -> tuple[list[dict[str, Any]], str]:
    """Pods bound to `node` and the list's resourceVersion."""
    answer = api.call("GET", "/api/v1/pods", query={"fieldSelector": f"spec.nodeName={node}"})
    return list(answer.get("items") or []), str(answer["metadata"]["resourceVersion"])


class NodePodInformer(threading.Thread):
    """Keeps a PodSink in step with the pods bound to one node."""

    def __init__(self, api: KubeRest, node: str, sink: PodSink, stop: threading.Event) -> None:
        super().__init__(name=f"informer-{node}", daemon=True)
        self._api = api
        self._node = node
        self._sink = sink
        self._stop = stop

    def run(self) -> None:
        """List and watch until stopped."""
        while not self._stop.is_set():
            try:
                self._list_and_watch()
            except Exception as error:
                log.warning("pod watch for node %s failed, re-listing: %s", self._node, error)
                self._stop.wait(RETRY_SECONDS)

    def _list_and_watch(self) -> None:
        pods, version = list_node_pods(self._api, self._node)
        self._sink.replace_node_pods(self._node, pods)
        while not self._stop.is_set():
            query = {
                "fieldSelector": f"spec.nodeName={self._node}",
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": str(WATCH_SECONDS),
            }
            for event in self._api.watch("/api/v1/pods", query, WATCH_SECONDS + 30):
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    raise ApiError(int(obj.get("code", 500)), str(obj.get("message", "")))
                version = str(obj.get("metadata", {}).get("resourceVersion", version))
                if kind in ("ADDED", "MODIFIED"):
                    self._sink.upsert(obj)
                elif kind == "DELETED":
                    self._sink.remove(obj)
                if self._stop.is_set():
                    return
