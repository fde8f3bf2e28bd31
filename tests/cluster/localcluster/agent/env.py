"""Resolve a container's environment the way kubelet does, as a pure function.

Order matters: `envFrom` sources first, then `env` entries in order, each `value` expanded
with `$(VAR)` against what is defined so far. Values come from literals, ConfigMap and Secret
keys, the downward API (`fieldRef`) and `resourceFieldRef`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .expansion import expand
from .objects import ContainerConfigError, ObjectSource
from .quantity import divide_ceil

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_LABEL_REF = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")
NODE_ALLOCATABLE = {"cpu": "64", "memory": "512Gi", "ephemeral-storage": "1Ti"}


@dataclass(frozen=True)
class PodRuntime:
    """What the agent knows about a pod beyond its spec: addresses on this host."""

    pod_ip: str
    host_ip: str = "127.0.0.1"


def field_value(pod: dict[str, Any], path: str, runtime: PodRuntime) -> str:
    """Resolve a downward-API `fieldPath` for a pod."""
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": runtime.pod_ip,
        "status.podIPs": runtime.pod_ip,
        "status.hostIP": runtime.host_ip,
        "status.hostIPs": runtime.host_ip,
    }
    if path in simple:
        return str(simple[path])
    match = _LABEL_REF.match(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        items = sorted((meta.get(path.split(".")[1]) or {}).items())
        return "\n".join(f'{key}="{value}"' for key, value in items)
    raise ContainerConfigError(f"unsupported fieldPath {path!r}")


def resource_value(container: dict[str, Any], ref: dict[str, Any]) -> str:
    """Resolve a `resourceFieldRef` (limits fall back to node allocatable, like kubelet)."""
    kind, _, resource = str(ref.get("resource", "")).partition(".")
    resources = container.get("resources") or {}
    value = (resources.get(kind) or {}).get(resource)
    if value is None and kind == "requests":
        value = (resources.get("limits") or {}).get(resource)
    if value is None:
        value = NODE_ALLOCATABLE.get(resource, "0")
    return divide_ceil(value, ref.get("divisor"))


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _key_ref(kind: str, ref: dict[str, Any], namespace: str, source: ObjectSource) -> str | None:
    name = str(ref.get("name", ""))
    data = (
        source.config_map(namespace, name)
        if kind == "ConfigMap"
        else source.secret(namespace, name)
    )
    optional = bool(ref.get("optional", False))
    if data is None:
        if optional:
            return None
        raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
    key = str(ref.get("key", ""))
    if key not in data:
        if optional:
            return None
        raise ContainerConfigError(f"couldn't find key {key} in {kind} {namespace}/{name}")
    return _decode(data[key])


def _env_from(entry: dict[str, Any], namespace: str, source: ObjectSource) -> dict[str, str]:
    prefix = str(entry.get("prefix", ""))
    for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
        ref = entry.get(field)
        if ref is None:
            continue
        name = str(ref.get("name", ""))
        data = (
            source.config_map(namespace, name)
            if kind == "ConfigMap"
            else source.secret(namespace, name)
        )
        if data is None:
            if ref.get("optional"):
                return {}
            raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
        return {
            prefix + key: _decode(value)
            for key, value in data.items()
            if _ENV_NAME.match(prefix + key)
        }
    return {}


def resolve_env(
    pod: dict[str, Any],
    container: dict[str, Any],
    source: ObjectSource,
    runtime: PodRuntime,
) -> dict[str, str]:
    """Return the container's environment in definition order; raise ContainerConfigError."""
    namespace = str(pod.get("metadata", {}).get("namespace", "default"))
    env: dict[str, str] = {}
    for entry in container.get("envFrom") or []:
        env.update(_env_from(entry, namespace, source))
    for entry in container.get("env") or []:
        name = str(entry["name"])
        value_from = entry.get("valueFrom")
        if value_from is None:
            env[name] = expand(str(entry.get("value", "")), env)
            continue
        resolved: str | None
        if "configMapKeyRef" in value_from:
            resolved = _key_ref("ConfigMap", value_from["configMapKeyRef"], namespace, source)
        elif "secretKeyRef" in value_from:
            resolved = _key_ref("Secret", value_from["secretKeyRef"], namespace, source)
        elif "fieldRef" in value_from:
            resolved = field_value(pod, str(value_from["fieldRef"]["fieldPath"]), runtime)
        elif "resourceFieldRef" in value_from:
            resolved = resource_value(container, value_from["resourceFieldRef"])
        else:
            raise ContainerConfigError(f"unsupported valueFrom for env {name}")
        if resolved is not None:
            env[name] = resolved
    return env
