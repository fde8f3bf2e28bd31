"""Where a Service's ready pods answer: EndpointSlices, read directly.

The shadow driver sends requests to pod addresses rather than the Service's virtual IP, so
it needs no kube-proxy (true of the local test cluster) and spreads load evenly itself.
"""

from __future__ import annotations

from specdecode.adapters.kube.client import KubeClients


def ready_endpoints(clients: KubeClients, namespace: str, service: str) -> list[str]:
    """Base URLs (`http://ip:port`) of the Service's ready endpoints, sorted."""
    slices = clients.discovery.list_namespaced_endpoint_slice(
        namespace, label_selector=f"kubernetes.io/service-name={service}"
    )
    urls: set[str] = set()
    for endpoint_slice in slices.items:
        ports = [p.port for p in endpoint_slice.ports or [] if p.port]
        for endpoint in endpoint_slice.endpoints or []:
            conditions = endpoint.conditions
            if conditions is not None and conditions.ready is False:
                continue
            for address in endpoint.addresses or []:
                host = f"[{address}]" if ":" in address else address
                urls.update(f"http://{host}:{port}" for port in ports)
    return sorted(urls)
