"""`status.applyFindings`: what the operator's last writes found in their way.

A foreign object named like one of the rollout's children, or a Patch promotion refused by
the source's owner: shown as Degraded, and it changes what the operator writes next. Kept
in status, not memory, so a restarted operator shows and sends the same.
"""

from __future__ import annotations

from pydantic import Field

from specdecode.api.base import KubeModel, optional

MAX_FINDINGS = 16  # the shadows, their Services and the splitter's: a handful at most


class ApplyFindings(KubeModel):
    """Objects the rollout does not own that hold its children's names; a refused promotion."""

    not_owned_children: list[str] = Field(
        default_factory=list,
        max_length=MAX_FINDINGS,
        description="One line per Deployment or Service named like a child that the rollout "
        "does not own (left untouched; Degraded ChildNotOwned).",
    )
    not_owned_load_token: str | None = optional(
        "Why the load-token Secret cannot be used (another object holds its "
        "name): no load pod starts meanwhile.",
    )
    not_owned_promotion_files: str | None = optional(
        "Why the promotion ConfigMap cannot be written (another object holds its name).",
    )
    patch_refused: str | None = optional(
        "Patch strategy: the API server's words refusing the promotion's apply "
        "(Degraded PatchConflict while Promoting).",
    )
    patch_refused_generation: int | None = optional(
        "The source's generation the promotion's apply was refused at: not "
        "sent again until the source changes.",
    )

    def not_owned(self) -> tuple[str, ...]:
        """Every not-owned finding, one message each (what Degraded ChildNotOwned names)."""
        singles = (self.not_owned_load_token, self.not_owned_promotion_files)
        return (*self.not_owned_children, *(found for found in singles if found))

    def is_empty(self) -> bool:
        """Nothing found: the field is left out of status."""
        return not self.not_owned() and self.patch_refused is None
