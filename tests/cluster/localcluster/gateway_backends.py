"""What the gateway reads from the cluster: its HTTPRoute and where each backend's pods are.

Why EndpointSlices: they are what kube-proxy and every Gateway implementation read, so a
backend gets traffic exactly when its pods are Ready in the eyes of the EndpointSlice
controller. A backendRef names a Service *port*; the Service port's name picks the
EndpointSlice port (the pods' targetPort, also when it is named). One read lists Services
and EndpointSlices once per namespace the route refers to, so a refresh costs a few
requests however many backends there are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from localcluster.httproute import BackendRef, Route, parse_route

GROUP, VERSION, PLURAL = "gateway.networking.k8s.io", "v1", "httproutes"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


@dataclass(frozen=True)
class View:
    """The route (None if it does not exist) and each backend's ready ``ip:port`` list."""

    route: Route | None = None
    resource_version: str | None = None
    endpoints: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _port_name(service: Mapping[str, Any], port: int) -> str | None:
    """The name ("" if unnamed) of the Service port numbered ``port``; None if absent."""
    for spec in service.get("spec", {}).get("ports") or []:
        if spec.get("port") == port:
            return str(spec.get("name") or "")
    return None


def ready_addresses(
    backend: BackendRef, service: Mapping[str, Any] | None, slices: Iterable[Mapping[str, Any]]
) -> tuple[str, ...]:
    """``ip:targetPort`` of every ready endpoint behind ``backend``'s Service port."""
    port_name = _port_name(service, backend.port) if service else None
    if port_name is None:
        return ()
    found = set()
    for endpoint_slice in slices:
        if endpoint_slice.get("addressType") != "IPv4":
            continue
        ports = [p for p in endpoint_slice.get("ports") or [] if (p.get("name") or "") == port_name]
        if not ports or ports[0].get("port") is None:
            continue
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:  # unset = ready
                continue
            found.add(f"{endpoint['addresses'][0]}:{ports[0]['port']}")
    return tuple(sorted(found))


class ClusterReader:
    """Reads one HTTPRoute and its backends with the admin kubeconfig (blocking calls)."""

    def __init__(self, kubeconfig: Path, namespace: str, route_name: str) -> None:
        self.namespace = namespace
        self.route_name = route_name
        self._api = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig)
        )
        self._custom = client.CustomObjectsApi(self._api)
        self._core = client.CoreV1Api(self._api)
        self._discovery = client.DiscoveryV1Api(self._api)

    def _route(self) -> dict[str, Any] | None:
        try:
            reply: Any = self._custom.get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, self.route_name,
                _preload_content=False, _request_timeout=10,
            )  # fmt: skip
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        route: dict[str, Any] = json.loads(reply.data)
        return route

    def _items(self, method: Any, namespace: str) -> list[dict[str, Any]]:
        reply = method(namespace, _preload_content=False, _request_timeout=10)
        items: list[dict[str, Any]] = json.loads(reply.data).get("items") or []
        return items

    def read(self) -> View:
        """The current route and endpoints (raises on API errors: the caller keeps the last)."""
        obj = self._route()
        if obj is None:
            return View()
        route = parse_route(obj)
        backends = route.backends()
        services: dict[tuple[str, str], dict[str, Any]] = {}
        slices: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for namespace in sorted({b.namespace for b in backends}):
            for service in self._items(self._core.list_namespaced_service, namespace):
                services[(namespace, service["metadata"]["name"])] = service
            for item in self._items(self._discovery.list_namespaced_endpoint_slice, namespace):
                owner = (item["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL)
                if owner:
                    slices.setdefault((namespace, owner), []).append(item)
        endpoints = {
            b.key: ready_addresses(
                b, services.get((b.namespace, b.name)), slices.get((b.namespace, b.name), [])
            )
            for b in backends
        }
        return View(route, obj["metadata"].get("resourceVersion"), endpoints)

    def close(self) -> None:
        self._api.close()
