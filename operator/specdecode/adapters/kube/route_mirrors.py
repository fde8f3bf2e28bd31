"""Gateway API HTTPRoutes read and patched: the RequestMirror filters that copy a route's
live traffic to the shadow engines.

The rules (which filters are ours, the patch, why a route cannot carry mirrors) are the
domain's (`domain.route_mirrors`); here the LIST that explains a missing route and the
guarded JSON patches. Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.domain.route_mirrors import MirrorWanted, Routes, filters_patch

ROUTE_GROUP = "gateway.networking.k8s.io"
ROUTE_VERSION = "v1"
ROUTE_PLURAL = "httproutes"


def list_routes(kube: KubeClients, namespace: str) -> Routes:
    """The namespace's HTTPRoutes, or why they cannot be read (no CRD, no permission).

    Routes normally come from the operator's watch; this LIST only explains why a Mirror
    rollout's route is missing from it (absent, no Gateway API, or no permission).
    """
    try:
        listing = kube.custom.list_namespaced_custom_object(
            ROUTE_GROUP, ROUTE_VERSION, namespace, ROUTE_PLURAL
        )
    except ApiException as error:
        if error.status == 404:
            return "the Gateway API HTTPRoute resource is not installed in this cluster"
        if error.status == 403:
            return f"the operator may not list HTTPRoutes in {namespace} (RBAC)"
        raise
    assert isinstance(listing, dict)  # the client returns the decoded JSON object
    items: list[dict[str, Any]] = listing.get("items") or []
    return items


def sync_route_mirrors(
    kube: KubeClients, namespace: str, routes: Routes, wanted: MirrorWanted
) -> int:
    """Patch each route whose mirrors of ours differ; returns how many were patched.

    A route that changed since the copy given (a failed resourceVersion `test`) is skipped:
    the watch delivers the fresh copy and wakes the rollout.

    Routes that could not be listed (no Gateway API, no permission) hold nothing of ours
    to remove, and `route_problem` reports it for Mirror rollouts, so this does nothing.
    """
    if isinstance(routes, str):
        return 0
    patched = 0
    for route in routes:
        operations = filters_patch(route, wanted)
        if not operations:
            continue
        try:
            kube.custom.patch_namespaced_custom_object(
                ROUTE_GROUP,
                ROUTE_VERSION,
                namespace,
                ROUTE_PLURAL,
                route["metadata"]["name"],
                operations,
                _content_type="application/json-patch+json",
            )
        except ApiException as error:
            # The route changed since the watched copy (the `test` failed), or went: its
            # watch event wakes the rollout, which patches the fresh copy.
            if error.status in (404, 409, 422):
                continue
            raise
        patched += 1
    return patched
