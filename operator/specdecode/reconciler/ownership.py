"""Children named like objects the operator does not own: remembered, shown as Degraded.

Applying children finds them (`adapters.kube.owned.apply_children` leaves them
untouched); the status of the same reconcile may already be written by then, so the
finding is kept per rollout, the loop is woken at once, and the next decision carries it
as Degraded=True (reason `ChildNotOwned`) naming each object and how to resolve it. The
cache does not watch such objects (they lack the operator's labels), so a rollout with one
retries at the analysis clock, not the slow resync: the user deleting it is seen soon.
The load-token Secret is such a child too, found when the first load pod is due
(`record_foreign_token`); no load pod starts while another object holds its name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from specdecode.adapters.kube.owned import ForeignObject
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.decision import Decision
from specdecode.domain.degraded import with_degraded
from specdecode.reconciler.runtime import Runtime

NOT_OWNED = "ChildNotOwned"
T = TypeVar("T", tuple[str, ...], str)


def _keep(runtime: Runtime, store: dict[str, T], key: str, found: T) -> None:
    """Keep `found` for the rollout (empty: forget); wake its loop if that changed."""
    before = store.get(key)
    if found:
        store[key] = found
    else:
        store.pop(key, None)
    if (found or None) != before:
        runtime.wakeups.wake(key)


def record_foreign(runtime: Runtime, key: str, found: Sequence[ForeignObject]) -> None:
    """Keep what this apply found (nothing: forget); wake the loop if that changed."""
    messages = tuple(sorted(foreign.message() for foreign in found))
    _keep(runtime, runtime.foreign_children, key, messages)


def record_foreign_token(runtime: Runtime, key: str, problem: str | None) -> None:
    """Keep why the rollout's load-token Secret cannot be used (None: it can); wake the
    loop if that changed."""
    _keep(runtime, runtime.foreign_token, key, problem or "")


def record_foreign_files(runtime: Runtime, key: str, found: ForeignObject | None) -> None:
    """Keep why the rollout's promotion ConfigMap cannot be written (None: it can)."""
    _keep(runtime, runtime.foreign_files, key, found.message() if found else "")


def with_foreign_children(
    runtime: Runtime, key: str, old: SpecDecodeRolloutStatus, decision: Decision
) -> Decision:
    """`decision`, Degraded=True while an object named like a child is not the rollout's."""
    token = runtime.foreign_token.get(key)
    files = runtime.foreign_files.get(key)
    messages = (
        *runtime.foreign_children.get(key, ()),
        *((token,) if token else ()),
        *((files,) if files else ()),
    )
    if not messages:
        return decision
    status = with_degraded(
        old, decision.status, NOT_OWNED, "; ".join(messages), runtime.clock.now()
    )
    return decision.with_status(status)
