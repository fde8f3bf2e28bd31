"""Pod volumes as plain folders, and the mount-path rewrite that lets processes find them.

Processes share the host's filesystem, so nothing can be mounted at a container's
`mountPath`. Instead each volume becomes `<pod dir>/volumes/<volume name>/` (a `hostPath`
volume is its real host path) and, per container, every occurrence of a `mountPath` in the
command, args and env values is replaced by that folder (plus `subPath`). A path the program
builds itself from a compiled-in default will not be found: pass paths explicitly.

Supported: configMap, secret, emptyDir, hostPath, persistentVolumeClaim (the host folder of
the hostPath or local PersistentVolume the claim names), downwardAPI and projected (configMap,
secret, downwardAPI, serviceAccountToken). Other kinds become empty folders.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from .env import PodRuntime, field_value
from .objects import ContainerConfigError, ObjectSource


class TokenMinter(Protocol):
    """Source of pod-bound ServiceAccount tokens (TokenRequest)."""

    def mint(self, pod: dict[str, Any], audience: str | None, expiration: int) -> str:
        """Return a token for the pod's ServiceAccount, bound to the pod, so files and
        kubeconfigs given to its processes authenticate exactly as that pod would."""


def _write_file(folder: Path, relative: str, data: bytes, mode: int) -> None:
    target = folder / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    os.chmod(target, mode)


def _project_keys(
    folder: Path, data: dict[str, bytes], items: list[dict[str, Any]] | None, mode: int
) -> None:
    if not items:
        for key, value in data.items():
            _write_file(folder, key, value, mode)
        return
    for item in items:
        key = str(item["key"])
        if key not in data:
            raise ContainerConfigError(f"configured key {key} not found in the object")
        _write_file(folder, str(item.get("path", key)), data[key], int(item.get("mode", mode)))


def _fetch(
    kind: str, ref: dict[str, Any], namespace: str, source: ObjectSource
) -> dict[str, bytes] | None:
    name = str(ref.get("name") or ref.get("secretName") or "")
    data = (
        source.config_map(namespace, name)
        if kind == "configMap"
        else source.secret(namespace, name)
    )
    if data is None and not ref.get("optional"):
        raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
    return data


class VolumeBuilder:
    """Materialises one pod's volumes under its folder."""

    def __init__(self, pod_dir: Path, source: ObjectSource, tokens: TokenMinter | None) -> None:
        self._root = pod_dir / "volumes"
        self._source = source
        self._tokens = tokens

    def build(self, pod: dict[str, Any], runtime: PodRuntime) -> dict[str, Path]:
        """Create or refresh every volume; return volume name -> host folder."""
        namespace = str(pod["metadata"].get("namespace", "default"))
        paths: dict[str, Path] = {}
        for volume in pod.get("spec", {}).get("volumes") or []:
            name = str(volume["name"])
            if "hostPath" in volume:
                paths[name] = Path(volume["hostPath"]["path"])
                continue
            if "persistentVolumeClaim" in volume:
                claim = str(volume["persistentVolumeClaim"]["claimName"])
                host = self._source.claim_host_path(namespace, claim)
                if host is None:
                    raise ContainerConfigError(
                        f'persistentvolumeclaim "{claim}" is not bound to a hostPath volume'
                    )
                paths[name] = Path(host)
                continue
            folder = self._root / name
            paths[name] = folder
            if "emptyDir" in volume or not self._is_projected_kind(volume):
                folder.mkdir(parents=True, exist_ok=True)
                continue
            staging = self._root / f".{name}.new"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            self._fill(volume, staging, namespace, pod, runtime)
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
        return paths

    @staticmethod
    def _is_projected_kind(volume: dict[str, Any]) -> bool:
        return any(k in volume for k in ("configMap", "secret", "downwardAPI", "projected"))

    def _fill(
        self,
        volume: dict[str, Any],
        folder: Path,
        namespace: str,
        pod: dict[str, Any],
        runtime: PodRuntime,
    ) -> None:
        if "configMap" in volume or "secret" in volume:
            kind = "configMap" if "configMap" in volume else "secret"
            ref = volume[kind]
            data = _fetch(kind, ref, namespace, self._source)
            mode = int(ref.get("defaultMode", 0o644))
            _project_keys(folder, data or {}, ref.get("items"), mode)
        elif "downwardAPI" in volume:
            self._downward(folder, volume["downwardAPI"].get("items") or [], pod, runtime)
        else:
            projected = volume["projected"]
            mode = int(projected.get("defaultMode", 0o644))
            for entry in projected.get("sources") or []:
                self._projected_source(entry, folder, pod, runtime, mode)

    def _projected_source(
        self,
        entry: dict[str, Any],
        folder: Path,
        pod: dict[str, Any],
        runtime: PodRuntime,
        mode: int,
    ) -> None:
        namespace = str(pod["metadata"].get("namespace", "default"))
        for kind in ("configMap", "secret"):
            if kind in entry:
                data = _fetch(kind, entry[kind], namespace, self._source)
                _project_keys(folder, data or {}, entry[kind].get("items"), mode)
        if "downwardAPI" in entry:
            self._downward(folder, entry["downwardAPI"].get("items") or [], pod, runtime)
        if "serviceAccountToken" in entry:
            spec = entry["serviceAccountToken"]
            if self._tokens is None:
                raise ContainerConfigError("no token source for serviceAccountToken volume")
            token = self._tokens.mint(
                pod, spec.get("audience"), int(spec.get("expirationSeconds", 3607))
            )
            _write_file(folder, str(spec.get("path", "token")), token.encode(), 0o600)

    @staticmethod
    def _downward(
        folder: Path, items: list[dict[str, Any]], pod: dict[str, Any], runtime: PodRuntime
    ) -> None:
        for item in items:
            if "fieldRef" not in item:
                continue
            value = field_value(pod, str(item["fieldRef"]["fieldPath"]), runtime)
            _write_file(folder, str(item["path"]), value.encode(), int(item.get("mode", 0o644)))


def mount_rewriter(
    container: dict[str, Any], volume_paths: dict[str, Path]
) -> Callable[[str], str]:
    """A function replacing the container's mount paths by host folders in a string.

    A mount path matches only as a whole path prefix: at the start of the string or after a
    character that cannot be part of a path (`=`, `:`, space, quotes ...), and followed by
    `/`, the end, or such a character. Longer mount paths win.
    """
    pairs: list[tuple[str, str]] = []
    for mount in container.get("volumeMounts") or []:
        host = volume_paths.get(str(mount["name"]))
        if host is None:
            continue
        if mount.get("subPath"):
            host = host / str(mount["subPath"])
        pairs.append((str(mount["mountPath"]).rstrip("/") or "/", str(host)))
    pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
    if not pairs:
        return lambda text: text
    table = dict(pairs)
    alternatives = "|".join(re.escape(path) for path, _ in pairs)
    pattern = re.compile(rf"(?<![\w./-])({alternatives})(?=/|$|[^\w.-])")
    return lambda text: pattern.sub(lambda match: table[match.group(1)], text)
