"""The routes a rollout's mirrors go on: the namespace's HTTPRoutes from the watched cache;
only when a Mirror rollout's route is missing from it is the API asked (one LIST), to tell
"absent" from "the Gateway API is not installed" or "not allowed". Which mirrors are wanted
and whether the route can carry them are the domain's rules (`domain.mirror_wanted`).
"""

from __future__ import annotations

import asyncio

from specdecode.adapters.kube.cache import ClusterView
from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.kube.route_mirrors import list_routes
from specdecode.domain.mirror_wanted import MirrorTraffic, wanted_mirrors
from specdecode.domain.route_mirrors import Routes


async def current_routes(
    cluster: ClusterView, clients: KubeClients, namespace: str, traffic: MirrorTraffic | None
) -> Routes:
    """The namespace's HTTPRoutes: the watched cache's, or one LIST when the rollout's
    route is not in it."""
    routes = cluster.namespace_routes(namespace)
    wanted = wanted_mirrors("", traffic, None).route
    names = {(r.get("metadata") or {}).get("name") for r in routes}
    if wanted is None or wanted in names:
        return routes
    return await asyncio.to_thread(list_routes, clients, namespace)
