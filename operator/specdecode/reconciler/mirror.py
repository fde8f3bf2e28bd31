"""Mirror traffic: keeps the user's HTTPRoute carrying our RequestMirror filters, or none.

Why declarative, like the children: while a stage of a Mirror rollout runs, routes toward
production mirror `mirrorPercent` to the splitter (`reconciler.splitter`) or to both
Services; at any other time none of ours remain. Checked every reconcile, so an edit or a
GitOps sync that drops them is repaired. Without `httpRoute` no route is written.
More: docs/internals.md.
"""

from __future__ import annotations

import asyncio

from specdecode.adapters.kube.mirror_wanted import current_routes
from specdecode.adapters.kube.route_mirrors import sync_route_mirrors
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.mirror_wanted import MirrorTraffic, wanted_mirrors
from specdecode.domain.route_mirrors import Routes
from specdecode.reconciler.runtime import Runtime


async def observe_routes(runtime: Runtime, namespace: str, traffic: MirrorTraffic | None) -> Routes:
    """The namespace's HTTPRoutes, from the watched cache (a LIST if the route is not in it)."""
    return await current_routes(runtime.cluster, runtime.kube, namespace, traffic)


async def steer_mirrors(
    runtime: Runtime,
    namespace: str,
    rollout: str,
    traffic: MirrorTraffic | None,
    plan: TrafficPlan | None,
    routes: Routes,
) -> int:
    """Make the listed routes carry exactly the mirrors wanted now; routes patched."""
    wanted = wanted_mirrors(rollout, traffic, plan)
    return await asyncio.to_thread(sync_route_mirrors, runtime.kube, namespace, routes, wanted)


async def steer_route_mirrors(
    runtime: Runtime,
    namespace: str,
    rollout: str,
    traffic: MirrorTraffic | None,
    plan: TrafficPlan | None,
) -> int:
    """The namespace's routes read now, then steered as `plan` wants (the apply's step)."""
    routes = await observe_routes(runtime, namespace, traffic)
    return await steer_mirrors(runtime, namespace, rollout, traffic, plan, routes)
