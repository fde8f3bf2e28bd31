"""Prometheus file-based service discovery, written by the agent for annotated pods.

One target group per running pod annotated `prometheus.io/scrape: "true"`:
target `<pod IP>:<prometheus.io/port, else the first container port>`, `__metrics_path__`
from `prometheus.io/path` (default /metrics), labels `namespace`, `pod`, `node`, and each
pod label twice: as `label_<name>` and as `<name>` itself, where names are sanitised to
Prometheus rules (every character outside [a-zA-Z0-9_] becomes `_`, a leading digit gets a
`_` prefix). A direct name that would clash with the labels above or start with `__` is
skipped; `label_<name>` is always there.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

RESERVED = frozenset({"namespace", "pod", "node", "job", "instance"})


def sanitize_label_name(name: str) -> str:
    """Turn a Kubernetes label key into a valid Prometheus label name."""
    cleaned = re.sub(r"[^a-zA-Z0-9_]", "_", name)
    return f"_{cleaned}" if cleaned[:1].isdigit() else cleaned


def scrape_port(pod: dict[str, Any]) -> int | None:
    """The annotated port, else the first declared container port."""
    annotations = pod.get("metadata", {}).get("annotations") or {}
    if "prometheus.io/port" in annotations:
        return int(annotations["prometheus.io/port"])
    for container in pod.get("spec", {}).get("containers", []):
        for port in container.get("ports") or []:
            return int(port["containerPort"])
    return None


def target_group(pod: dict[str, Any], pod_ip: str) -> dict[str, Any] | None:
    """The file-SD group for a pod, or None if it is not annotated for scraping."""
    meta = pod.get("metadata", {})
    annotations = meta.get("annotations") or {}
    if str(annotations.get("prometheus.io/scrape", "")).lower() != "true":
        return None
    port = scrape_port(pod)
    if port is None:
        return None
    labels: dict[str, str] = {
        "__metrics_path__": str(annotations.get("prometheus.io/path", "/metrics")),
        "namespace": str(meta.get("namespace", "")),
        "pod": str(meta.get("name", "")),
        "node": str(pod.get("spec", {}).get("nodeName", "")),
    }
    for key, value in sorted((meta.get("labels") or {}).items()):
        name = sanitize_label_name(key)
        labels.setdefault(f"label_{name}", str(value))
        if name not in RESERVED and not name.startswith("__"):
            labels.setdefault(name, str(value))
    return {"targets": [f"{pod_ip}:{port}"], "labels": labels}


def write_atomically(path: Path, content: str) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(content)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class TargetFile:
    """The SD file: target groups by pod UID, rewritten whenever the set changes."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._groups: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._write()

    def set(self, owner: str, group: dict[str, Any] | None) -> None:
        """Publish (or, with None, withdraw) the owner's group; write only on change."""
        with self._lock:
            current = self._groups.get(owner)
            if group == current:
                return
            if group is None:
                self._groups.pop(owner, None)
            else:
                self._groups[owner] = group
            self._write()

    def _write(self) -> None:
        ordered = [self._groups[key] for key in sorted(self._groups)]
        write_atomically(self._path, json.dumps(ordered, indent=2) + "\n")
