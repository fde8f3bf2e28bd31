"""The names of a rollout's children: one rule for rendering, observing and the mirrors.

Pure, so the domain's mirror rules (`domain.mirror_wanted`) name the Services they mirror
to exactly as the renderers name them.
"""

from __future__ import annotations

from specdecode.domain.observations import ChildRole


def child_name(rollout_name: str, role: ChildRole) -> str:
    """Production keeps the rollout's name; shadows append their role."""
    return rollout_name if role is ChildRole.PRODUCTION else f"{rollout_name}-{role.value}"


def splitter_name(rollout: str) -> str:
    """`<rollout>-splitter`: the Deployment's and the Service's name."""
    return f"{rollout}-splitter"
