"""What applying a decision finds in its way, collected by the apply that finds it.

Applying children finds objects named like them that the rollout does not own
(`owned.apply_children` leaves them untouched); the load-token Secret and the promotion
ConfigMap can be such objects too, and a Patch promotion's apply can be refused by the
source's owner. One apply collects them (`Found`) and `reconciler.apply` writes
`status.applyFindings` where they differ; the domain shows them as Degraded
(`domain.apply_findings`). A value type shared by the apply steps, so it sits below them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specdecode.adapters.kube.owned import ForeignObject
from specdecode.api.status_findings import ApplyFindings


class Found:
    """What one apply found. A part this apply did not look at keeps what status says."""

    def __init__(self) -> None:
        self._updates: dict[str, Any] = {}

    def children(self, found: Sequence[ForeignObject]) -> None:
        """The children's apply: exactly these are not the rollout's."""
        self._updates["not_owned_children"] = sorted({f.message() for f in found})

    def more_children(self, found: Sequence[ForeignObject]) -> None:
        """Another apply of children (the splitter's, after `children`): these too."""
        known = self._updates.get("not_owned_children", [])
        self._updates["not_owned_children"] = sorted({*known, *(f.message() for f in found)})

    def load_token(self, problem: str | None) -> None:
        """Why the load-token Secret cannot be used (None: it can)."""
        self._updates["not_owned_load_token"] = problem or None

    def promotion_files(self, found: ForeignObject | None) -> None:
        """Why the promotion ConfigMap cannot be written (None: it can)."""
        self._updates["not_owned_promotion_files"] = found.message() if found else None

    def patch(self, refused: tuple[int, str] | None) -> None:
        """The promotion's apply: refused at (source generation, the server's words), or not."""
        generation, words = refused if refused is not None else (None, None)
        self._updates["patch_refused_generation"] = generation
        self._updates["patch_refused"] = words

    def merged(self, before: ApplyFindings | None) -> ApplyFindings | None:
        """What status should say after this apply (None: nothing found)."""
        if not self._updates:
            return before
        after = (before or ApplyFindings()).model_copy(update=self._updates)
        return None if after.is_empty() else after
