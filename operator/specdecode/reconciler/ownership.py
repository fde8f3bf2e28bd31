"""What applying a decision finds in its way: kept in status, shown as Degraded.

Applying children finds objects named like them that the rollout does not own
(`adapters.kube.owned.apply_children` leaves them untouched); the load-token Secret and
the promotion ConfigMap can be such objects too, and a Patch promotion's apply can be
refused by the source's owner. The status of the same reconcile is written by then, so
one apply collects what it found (`Found`) and, where that differs from what status
says, writes `status.applyFindings` once more (`reconciler.apply.write_findings`); that
write wakes the loop, and the next decision carries the findings as Degraded=True
(reason `ChildNotOwned`, naming each object and how to resolve it). Kept in status, not
in the operator's memory: a restarted operator shows the same condition and writes the
same (issue 35 item 2). The cache does not watch such objects (they lack the operator's
labels), so a rollout with one retries at the analysis clock, not the slow resync.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from specdecode.adapters.kube.owned import ForeignObject
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.api.status_findings import ApplyFindings
from specdecode.domain.decision import Decision
from specdecode.domain.degraded import with_degraded

NOT_OWNED = "ChildNotOwned"


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


def carry_findings(old: SpecDecodeRolloutStatus, decision: Decision) -> Decision:
    """`decision` with the stored findings: they belong to apply, not to the state machine
    (a transition that builds its status afresh would drop them, and they would be
    written back by the next apply: two writes for nothing)."""
    if decision.status.apply_findings == old.apply_findings:
        return decision
    return decision.with_status(
        decision.status.model_copy(update={"apply_findings": old.apply_findings})
    )


def with_foreign_children(
    old: SpecDecodeRolloutStatus, decision: Decision, now: datetime
) -> Decision:
    """`decision`, Degraded=True while an object named like a child is not the rollout's."""
    findings = old.apply_findings
    messages = findings.not_owned() if findings is not None else ()
    if not messages:
        return decision
    status = with_degraded(old, decision.status, NOT_OWNED, "; ".join(messages), now)
    return decision.with_status(status)


def not_owned_found(status: SpecDecodeRolloutStatus) -> bool:
    """Whether status names an object in the rollout's way (no watch says when it goes)."""
    return status.apply_findings is not None and bool(status.apply_findings.not_owned())
