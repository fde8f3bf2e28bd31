"""What every `kubectl specdecode` view shares: kubectl's way to connect, its error
sentences, ages, column tables and output formats.

Kept apart from the views (rollouts in `kubectl_plugin`, tunings in `kubectl_tuning`) so
each view stays small and both behave exactly like kubectl in the same ways. Modules named
`kubectl_*` run as the user, never in the operator (the chart's RBAC test skips them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client import ApiException
from kubernetes.config import ConfigException

from specdecode.api import GROUP, PLURAL
from specdecode.api.tuning import PLURAL as TUNING_PLURAL

OUTPUTS = ("table", "json", "yaml")
# How to get each CRD: the chart ships both (an older release may lack the tuning's).
INSTALL_HINT = {
    PLURAL: "helm install specdecode-operator charts/specdecode-operator",
    TUNING_PLURAL: f"kubectl apply -f crds/{GROUP}_{TUNING_PLURAL}.yaml (or upgrade the chart)",
}


class PluginError(Exception):
    """A failure to report in one line with exit code 1 (never a traceback)."""


@dataclass(frozen=True)
class Target:
    """Where to talk to: authenticated clients and the namespace kubectl would use."""

    api: client.CustomObjectsApi
    core: client.CoreV1Api  # the tuning's report ConfigMap
    namespace: str


def connect(kubeconfig: str | None, context: str | None, namespace: str | None) -> Target:
    """Load the kubeconfig like kubectl does (in-cluster config when there is none)."""
    try:
        api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context
        )
        contexts, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=kubeconfig
        )
        if context is not None:
            active = next((c for c in contexts if c["name"] == context), active)
        default_namespace = (active or {}).get("context", {}).get("namespace") or "default"
    except (ConfigException, FileNotFoundError) as error:
        if kubeconfig is not None or context is not None:
            raise PluginError(f"cannot load kubeconfig: {error}") from error
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except ConfigException as incluster_error:
            raise PluginError(f"no kubeconfig and not in a pod: {error}") from incluster_error
        api_client, default_namespace = client.ApiClient(), "default"
    return Target(
        client.CustomObjectsApi(api_client),
        client.CoreV1Api(api_client),
        namespace or default_namespace,
    )


def explain(
    error: ApiException, namespace: str, name: str | None, plural: str = PLURAL
) -> PluginError:
    """Turn an API error into the sentence a user needs (missing object vs missing CRD)."""
    resource = f"{plural}.{GROUP}"
    try:
        body = json.loads(error.body or "{}")
    except (TypeError, ValueError):
        body = {}
    details = body.get("details") or {} if isinstance(body, dict) else {}
    if error.status == 404 and details.get("kind") == plural:
        return PluginError(f'{resource} "{name}" not found in namespace "{namespace}"')
    if error.status == 404:
        return PluginError(
            f"the server doesn't have the resource {resource}: is the CRD installed? "
            f"({INSTALL_HINT.get(plural, 'see crds/')})"
        )
    reason = body.get("message") if isinstance(body, dict) else None
    return PluginError(f"{error.status} {error.reason}: {reason or error.body}")


def age(timestamp: object, now: datetime) -> str:
    """kubectl-style age: 45s, 12m, 3h, 2d."""
    if not isinstance(timestamp, str):
        return "-"
    started = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    seconds = max(0, int((now - started).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def columns(rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns three spaces apart, like `kubectl get`; a header alone: none."""
    if len(rows) <= 1:
        return "No resources found"
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def object_table(
    items: Sequence[Mapping[str, Any]],
    all_namespaces: bool,
    header: Sequence[str],
    row: Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]],
) -> str:
    """One line per object, like `kubectl get`, with the namespace column under -A;
    `row` makes an object's cells from its metadata and its status."""
    rows = [[*(("NAMESPACE",) if all_namespaces else ()), *header]]
    for item in items:
        meta, status = item.get("metadata", {}), item.get("status") or {}
        namespace = [str(meta.get("namespace", ""))] if all_namespaces else []
        rows.append(namespace + row(meta, status))
    return columns(rows)


def render(value: Any, output: str, table: Callable[[], str]) -> str:
    """The requested output format of an object (or list) from the API server."""
    if output == "json":
        return json.dumps(value, indent=2, sort_keys=True)
    if output == "yaml":
        return yaml.safe_dump(value, sort_keys=False).rstrip()
    return table()


def as_object(value: object) -> dict[str, Any]:
    """The client returns custom objects as plain JSON dicts (typed `object`)."""
    if not isinstance(value, dict):
        raise PluginError(f"unexpected answer from the API server: {type(value).__name__}")
    return value
