"""One reconcile of one rollout: one pass of observe, decide, act.

1. observe (`reconciler.observe`): refuse a copy older than our own last write
   (`StaleRollout`, before anything is sent), parse and resolve the spec, then read once everything
   the decision needs into an immutable `Snapshot` (the watched cache for children, pods
   and routes; the load pods', the splitter's and Prometheus' measurements when a look is
   due; the engines' releases); the adapters are called only here and in 3;
2. decide (`domain.pass_decision.decide_pass`): a pure function of what was seen and the
   clock, returning the next status, the Events and the children, traffic and
   annotations the rollout should have;
3. act (`reconciler.apply.apply_decision`): Events, the status guarded by the
   resourceVersion it was computed from, then children, the promotion, load pods, the
   splitter, the findings and route mirrors, each written only where the cache shows it
   differs, and the action annotation consumed.
Each step is idempotent, so a reconcile interrupted anywhere is simply run again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specdecode.adapters.kube.rollouts import RolloutRef, StaleRollout
from specdecode.domain.decision import Decision
from specdecode.domain.pass_decision import decide_pass
from specdecode.reconciler.apply import apply_decision, next_reconcile_in
from specdecode.reconciler.observe import observe, parse_status, validation_message
from specdecode.reconciler.runtime import Runtime

__all__ = [
    "RolloutRef",
    "StaleRollout",
    "next_reconcile_in",
    "parse_status",
    "reconcile",
    "validation_message",
]


async def reconcile(
    runtime: Runtime,
    ref: RolloutRef,
    raw_spec: Mapping[str, Any],
    raw_status: Mapping[str, Any] | None,
    annotations: Mapping[str, str],
) -> Decision:
    """Bring the rollout's children, traffic and status in line with its spec."""
    snapshot = await observe(runtime, ref, raw_spec, raw_status, annotations)
    decision = decide_pass(snapshot.seen, snapshot.now)
    await apply_decision(runtime, snapshot, decision)
    return decision
