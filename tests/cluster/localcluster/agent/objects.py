"""Read access to the ConfigMaps, Secrets and volume claims pods reference (a small Protocol).

Env resolution and volume materialisation are pure functions of a pod and this source, so
unit tests pass a dict-backed fake while the agent passes one backed by the API server.
"""

from __future__ import annotations

import base64
from typing import Protocol


class ContainerConfigError(Exception):
    """A pod references something that is missing; kubelet reports CreateContainerConfigError."""


class ObjectSource(Protocol):
    """Where ConfigMap and Secret contents come from."""

    def config_map(self, namespace: str, name: str) -> dict[str, bytes] | None:
        """Return a ConfigMap's data and binaryData merged as bytes, or None if it is absent.

        Bytes, because mounted files must be byte-exact; env users decode them as UTF-8.
        """

    def secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        """Return a Secret's decoded data, or None if absent; why bytes: as for config_map."""

    def claim_host_path(self, namespace: str, claim: str) -> str | None:
        """The host folder behind a PersistentVolumeClaim: the hostPath (or local path) of the
        PersistentVolume it names, or None if either is missing. Why: a model volume reaches
        an engine the way it would on a real node, through a claim."""


class DictObjectSource:
    """An in-memory ObjectSource for tests: {(namespace, name): {key: value}}."""

    def __init__(
        self,
        config_maps: dict[tuple[str, str], dict[str, str]] | None = None,
        secrets: dict[tuple[str, str], dict[str, str]] | None = None,
        claims: dict[tuple[str, str], str] | None = None,
    ) -> None:
        self._config_maps = config_maps or {}
        self._secrets = secrets or {}
        self._claims = claims or {}

    def config_map(self, namespace: str, name: str) -> dict[str, bytes] | None:
        data = self._config_maps.get((namespace, name))
        return None if data is None else {k: v.encode() for k, v in data.items()}

    def secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        data = self._secrets.get((namespace, name))
        return None if data is None else {k: v.encode() for k, v in data.items()}

    def claim_host_path(self, namespace: str, claim: str) -> str | None:
        return self._claims.get((namespace, claim))


def config_map_payload(obj: dict[str, object]) -> dict[str, bytes]:
    """Merge a ConfigMap's `data` (text) and `binaryData` (base64) into bytes by key."""
    payload: dict[str, bytes] = {}
    data = obj.get("data") or {}
    binary = obj.get("binaryData") or {}
    assert isinstance(data, dict) and isinstance(binary, dict)
    for key, value in data.items():
        payload[str(key)] = str(value).encode()
    for key, value in binary.items():
        payload[str(key)] = base64.b64decode(str(value))
    return payload


def secret_payload(obj: dict[str, object]) -> dict[str, bytes]:
    """Decode a Secret's base64 `data` (and plain `stringData`, if a server echoed it)."""
    payload: dict[str, bytes] = {}
    data = obj.get("data") or {}
    strings = obj.get("stringData") or {}
    assert isinstance(data, dict) and isinstance(strings, dict)
    for key, value in data.items():
        payload[str(key)] = base64.b64decode(str(value))
    for key, value in strings.items():
        payload[str(key)] = str(value).encode()
    return payload
