"""Mirror traffic: keeps the user's HTTPRoute carrying our RequestMirror filters, or none.

A declarative effect of the decision, like the children: while the domain plans shadow
traffic for a stage of a Mirror rollout, the route's rules toward production mirror
`mirrorPercent` of live requests to the splitter's Service (Splitter pairing,
`reconciler.splitter`), or to the baseline and the candidate Services (ServerSide); at any other
time (no stage running, promotion, rollback, a spec switched to Prompts, the rollout
deleted) none of ours remain on any route of the namespace. Without `httpRoute` (always so
with a workloadRef) the operator writes no route: the user mirrors to the splitter's
Service themselves, and that filter is theirs (ours are only on routes we marked,
`adapters.kube.route_mirrors`). Checked on every reconcile, so
an edit or a GitOps sync that drops or changes our filters is repaired.
The namespace's routes come from the watched cache (`observe_routes`); a route edit wakes
the namespace's rollouts, so a dropped filter is repaired at once.
"""

from __future__ import annotations

import asyncio

from specdecode.adapters.kube.route_mirrors import (
    MirrorWanted,
    Routes,
    list_routes,
    route_problem,
    sync_route_mirrors,
)
from specdecode.adapters.load.splitter import MIRROR_PORT, splitter_name
from specdecode.adapters.render import child_name
from specdecode.api import MirrorStatus, SpecDecodeRolloutSpec, TrafficSourceType
from specdecode.domain.decision import Decision, TrafficPlan
from specdecode.domain.observations import ChildRole
from specdecode.reconciler.runtime import Runtime

SHADOW_ROLES = (ChildRole.BASELINE, ChildRole.CANDIDATE)


def wanted_mirrors(
    rollout: str, spec: SpecDecodeRolloutSpec | None, plan: TrafficPlan | None
) -> MirrorWanted:
    """The mirrors a rollout wants now during a Mirror stage: one toward the splitter's
    Service (Splitter pairing) or one toward each shadow (ServerSide); else none.

    `spec` None (an unreadable spec, a deleted rollout) wants none anywhere.
    """
    shadows = tuple(child_name(rollout, role) for role in SHADOW_ROLES)
    splitter = splitter_name(rollout)
    none_wanted = MirrorWanted(
        route=None,
        production_service=child_name(rollout, ChildRole.PRODUCTION),
        own_services=frozenset(shadows),
        rollout=rollout,
        # a mirror toward the splitter is ours only where we wrote it (a marked route):
        # elsewhere it is the user's own (an adopted Deployment's owner, no httpRoute)
        marked_services=frozenset((splitter,)),
    )
    if spec is None or spec.analysis.traffic.source is not TrafficSourceType.MIRROR:
        return none_wanted
    traffic = spec.analysis.traffic
    if traffic.server_side_mirror:
        services, port = shadows, spec.engine.port
    else:  # one mirror toward the splitter, which sends each request to both shadows
        services, port = (splitter,), MIRROR_PORT
    return MirrorWanted(
        route=traffic.http_route,
        production_service=none_wanted.production_service,
        own_services=none_wanted.own_services,
        rollout=rollout,
        marked_services=none_wanted.marked_services,
        services=services if plan is not None else (),
        port=port,
        percent=traffic.mirror_percent,
    )


async def observe_routes(
    runtime: Runtime, namespace: str, spec: SpecDecodeRolloutSpec | None
) -> Routes:
    """The namespace's HTTPRoutes, from the watched cache.

    Only when a Mirror rollout's route is missing from the cache is the API asked (one
    LIST), to tell "absent" from "the Gateway API is not installed" or "not allowed".
    """
    routes = runtime.cluster.namespace_routes(namespace)
    wanted = wanted_mirrors("", spec, None).route
    names = {(r.get("metadata") or {}).get("name") for r in routes}
    if wanted is None or wanted in names:
        return routes
    return await asyncio.to_thread(list_routes, runtime.kube, namespace)


def mirror_problem(routes: Routes, rollout: str, spec: SpecDecodeRolloutSpec) -> str | None:
    """Why a Mirror rollout's route cannot carry mirrors (None: it can, or not Mirror)."""
    problem = route_problem(routes, wanted_mirrors(rollout, spec, None))
    return f"traffic source Mirror: {problem}" if problem else None


async def steer_mirrors(
    runtime: Runtime,
    namespace: str,
    rollout: str,
    spec: SpecDecodeRolloutSpec | None,
    plan: TrafficPlan | None,
    routes: Routes,
) -> int:
    """Make the listed routes carry exactly the mirrors wanted now; routes patched."""
    wanted = wanted_mirrors(rollout, spec, plan)
    return await asyncio.to_thread(sync_route_mirrors, runtime.kube, namespace, routes, wanted)


def with_mirror_status(rollout: str, spec: SpecDecodeRolloutSpec, decision: Decision) -> Decision:
    """`decision` with `status.mirror` naming the splitter's Service and the route we write
    (None unless Mirror through the splitter): the one name a user who mirrors themselves
    (an adopted Deployment's owner) needs, read from the rollout rather than guessed."""
    traffic = spec.analysis.traffic
    mirror = (
        MirrorStatus(
            splitter_service=f"{splitter_name(rollout)}:{MIRROR_PORT}",
            http_route=traffic.http_route,
        )
        if traffic.splitter_mirror
        else None
    )
    if decision.status.mirror == mirror:
        return decision
    return decision.with_status(decision.status.model_copy(update={"mirror": mirror}))
