"""Mirror traffic: keeps the user's HTTPRoute carrying our RequestMirror filters, or none.

A declarative effect of the decision, like the children: while the domain plans shadow
traffic for a stage of a Mirror rollout, the route's rules toward production mirror
`mirrorPercent` of live requests to the baseline and the candidate Services; at any other
time (no stage running, promotion, rollback, a spec switched to Prompts, the rollout
deleted) none of ours remain on any route of the namespace. Checked on every reconcile, so
an edit or a GitOps sync that drops or changes our filters is repaired within one interval.
"""

from __future__ import annotations

import asyncio

from specdecode.adapters.kube.route_mirrors import MirrorWanted, route_problem, sync_route_mirrors
from specdecode.adapters.render import child_name
from specdecode.api import SpecDecodeRolloutSpec, TrafficSourceType
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.observations import ChildRole
from specdecode.reconciler.runtime import Runtime

SHADOW_ROLES = (ChildRole.BASELINE, ChildRole.CANDIDATE)


def wanted_mirrors(
    rollout: str, spec: SpecDecodeRolloutSpec | None, plan: TrafficPlan | None
) -> MirrorWanted:
    """The mirrors a rollout wants now: toward both shadows during a Mirror stage, else none.

    `spec` None (an unreadable spec, a deleted rollout) wants none anywhere.
    """
    traffic = spec.analysis.traffic if spec is not None else None
    mirror = traffic is not None and traffic.source is TrafficSourceType.MIRROR
    shadows = tuple(child_name(rollout, role) for role in SHADOW_ROLES)
    return MirrorWanted(
        route=traffic.http_route if traffic is not None and mirror else None,
        production_service=child_name(rollout, ChildRole.PRODUCTION),
        own_services=frozenset(shadows),
        services=shadows if mirror and plan is not None else (),
        port=spec.engine.port if spec is not None else 0,
        percent=traffic.mirror_percent if traffic is not None else 100,
    )


async def observe_mirror_route(
    runtime: Runtime, namespace: str, rollout: str, spec: SpecDecodeRolloutSpec
) -> str | None:
    """Why a Mirror rollout's route cannot carry mirrors (None: it can, or not Mirror)."""
    if spec.analysis.traffic.source is not TrafficSourceType.MIRROR:
        return None
    wanted = wanted_mirrors(rollout, spec, None)
    problem = await asyncio.to_thread(route_problem, runtime.kube, namespace, wanted)
    return f"traffic source Mirror: {problem}" if problem else None


async def steer_mirrors(
    runtime: Runtime,
    namespace: str,
    rollout: str,
    spec: SpecDecodeRolloutSpec | None,
    plan: TrafficPlan | None,
) -> int:
    """Make the namespace's routes carry exactly the mirrors wanted now; routes patched."""
    wanted = wanted_mirrors(rollout, spec, plan)
    return await asyncio.to_thread(sync_route_mirrors, runtime.kube, namespace, wanted)
