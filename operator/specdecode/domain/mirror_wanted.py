"""Which RequestMirror filters a rollout wants on its HTTPRoute, and whether the route it
names can carry them: one rule that observe (`mirror_route_problem`) and act (make the
routes carry exactly the wanted mirrors, `reconciler.mirror`) both read.

Pure: the routes come from the watched cache or one LIST (`adapters.kube.mirror_wanted`);
the spec, as a `MirrorTraffic` (`reconciler.spec_boundary`).
"""

from __future__ import annotations

from dataclasses import dataclass

from specdecode.domain.child_names import child_name, splitter_name
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_flags import MIRROR_PORT
from specdecode.domain.observations import SHADOW_ROLES, ChildRole
from specdecode.domain.route_mirrors import MirrorWanted, Routes, route_problem


@dataclass(frozen=True)
class MirrorTraffic:
    """What a Mirror rollout's spec says of its mirrors (a rollout of another traffic
    source, an unreadable spec or a deleted rollout has none: None)."""

    route: str | None  # spec.analysis.traffic.httpRoute
    server_side: bool  # the route mirrors to each shadow, not to the splitter
    engine_port: int  # spec.engine.port, the shadows' port
    percent: int  # spec.analysis.traffic.mirrorPercent


def wanted_mirrors(
    rollout: str, traffic: MirrorTraffic | None, plan: TrafficPlan | None
) -> MirrorWanted:
    """The mirrors a rollout wants now during a Mirror stage: one toward the splitter's
    Service (Splitter pairing) or one toward each shadow (ServerSide); else none.

    `traffic` None (not Mirror, an unreadable spec, a deleted rollout) wants none anywhere.
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
    if traffic is None:
        return none_wanted
    if traffic.server_side:
        services, port = shadows, traffic.engine_port
    else:  # one mirror toward the splitter, which sends each request to both shadows
        services, port = (splitter,), MIRROR_PORT
    return MirrorWanted(
        route=traffic.route,
        production_service=none_wanted.production_service,
        own_services=none_wanted.own_services,
        rollout=rollout,
        marked_services=none_wanted.marked_services,
        services=services if plan is not None else (),
        port=port,
        percent=traffic.percent,
    )


def mirror_route_problem(routes: Routes, rollout: str, traffic: MirrorTraffic | None) -> str | None:
    """Why a Mirror rollout's route cannot carry mirrors (None: it can, or not Mirror)."""
    problem = route_problem(routes, wanted_mirrors(rollout, traffic, None))
    return f"traffic source Mirror: {problem}" if problem else None


def splitter_service(rollout: str) -> str:
    """The splitter's Service as a user mirrors to it ("name:port", `status.mirror`)."""
    return f"{splitter_name(rollout)}:{MIRROR_PORT}"
