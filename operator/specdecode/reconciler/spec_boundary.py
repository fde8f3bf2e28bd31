"""Where the rollout's resolved spec (wire model) meets the domain's rules of its mirrors
and of the scrape check: the spec in, as the domain reads it, once a reconcile (observe
keeps it on the `Snapshot` for the apply).

Why one module: those rules (`domain.mirror_wanted`, `domain.engine_metrics`) import
nothing from `api` (an import-linter contract), so a second API version changes these
conversions, not the rules. Pure conversion: no rule is decided here.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdecode.adapters.gate_boundary import observations_needed
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.domain.gates.registry import Need
from specdecode.domain.mirror_wanted import MirrorTraffic
from specdecode.vocabulary import TrafficSourceType


@dataclass(frozen=True)
class SpecViews:
    """The spec as the mirrors' rules and the scrape check read it."""

    mirror: MirrorTraffic | None  # None unless its traffic source is Mirror
    stage_needs: tuple[frozenset[Need], ...]  # what each stage's measured gates need


def views_of(spec: SpecDecodeRolloutSpec) -> SpecViews:
    """The spec's views, converted once."""
    return SpecViews(mirror_traffic_of(spec), stage_needs_of(spec))


def mirror_traffic_of(spec: SpecDecodeRolloutSpec | None) -> MirrorTraffic | None:
    """What the spec says of its mirrors; None unless its traffic source is Mirror."""
    if spec is None or spec.analysis.traffic.source is not TrafficSourceType.MIRROR:
        return None
    traffic = spec.analysis.traffic
    return MirrorTraffic(
        route=traffic.http_route,
        server_side=traffic.server_side_mirror,
        engine_port=spec.engine.port,
        percent=traffic.mirror_percent,
    )


def stage_needs_of(spec: SpecDecodeRolloutSpec) -> tuple[frozenset[Need], ...]:
    """What each stage's measured gates need, stage by stage."""
    return tuple(observations_needed(spec, index) for index in range(len(spec.analysis.stages)))
