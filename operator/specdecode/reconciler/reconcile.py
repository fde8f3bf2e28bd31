"""One reconcile of one rollout: one pass of observe, decide, act.

1. observe (`reconciler.observe`): refuse a stale copy, read once into a `Snapshot`;
2. decide (`domain.pass_decision.decide_pass`): a pure function of it and the clock;
3. act (`reconciler.apply.apply_decision`): Events, the guarded status, then each effect
   only where the cache differs.
Why: each step is idempotent, so an interrupted reconcile is simply run again.
More: docs/internals.md.
"""

from __future__ import annotations

from specdecode.adapters.kube.rollouts import RolloutRead, RolloutRef, StaleRollout
from specdecode.domain.decision import Decision
from specdecode.domain.pass_decision import decide_pass
from specdecode.reconciler.apply import apply_decision, next_reconcile_in
from specdecode.reconciler.observe import observe, parse_status, validation_message
from specdecode.reconciler.runtime import Runtime

__all__ = [
    "RolloutRead",
    "RolloutRef",
    "StaleRollout",
    "next_reconcile_in",
    "parse_status",
    "reconcile",
    "validation_message",
]


async def reconcile(runtime: Runtime, rollout: RolloutRead) -> Decision:
    """Bring the rollout's children, traffic and status in line with its spec."""
    snapshot = await observe(runtime, rollout)
    return await apply_decision(runtime, snapshot, decide_pass(snapshot.seen, snapshot.now))
