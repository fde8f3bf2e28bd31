"""Read production's counters and step-ITL histogram for the drift guard's look, when due.

Why here and not in `reconcile`: it is the one read a steady (Promoted) rollout makes, so it
stays small: nothing while the guard has nothing to judge, else one range query per counter
(and the step-ITL buckets while `guard.latency` has a reference) for the grid's latest look,
at that look's instant, each look judged once (`runtime.guard_reads`, marked by
`reconciler.apply` once the status that records the look is written: a write refused as
stale leaves the look to be read again). The figures also go to the
`specdecode_production_alpha` gauge. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from specdecode.adapters.kube.rollouts import RolloutRef
from specdecode.adapters.metrics import EngineSelector
from specdecode.adapters.workload_source import production_deployment
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.drift import MIN_BLOCKS, ProductionAcceptance, block_seconds, can_judge
from specdecode.domain.guard_model import GuardPlan
from specdecode.domain.guarding import guard_check, planned_grid
from specdecode.domain.latency_drift import ProductionLatency, latency_guarded
from specdecode.domain.observations import MetricError, StepHistogram
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.transitions import guard_state
from specdecode.reconciler.guard_boundary import guard_plan_of
from specdecode.reconciler.runtime import Runtime

LOG = logging.getLogger(__name__)


Observed = tuple[ProductionAcceptance | MetricError | None, ProductionLatency | MetricError | None]


async def observe_production(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    now: datetime,
    plan: GuardPlan | None = None,
) -> Observed:
    """Production's blocks for the look due at `now` (acceptance, latency); None when no
    look is due, or (latency) nothing to judge it against. `plan`: the spec as the guard
    reads it, when the caller has read it already."""
    plan, state = plan or guard_plan_of(spec), guard_state(status)
    grid = planned_grid(plan, state)
    look = grid.latest(now) if grid is not None else None
    if look is None or runtime.guard_reads.judged.get(ref.key) == look.at:
        return None, None
    scrape = runtime.settings.engine_scrape_interval_seconds
    window = spec.guard.window_seconds
    if not can_judge(window, scrape) and ref.key not in runtime.guard_reads.said_blind:
        runtime.guard_reads.said_blind.add(ref.key)
        LOG.warning(
            "%s: guard.windowSeconds %s holds fewer than %d blocks of four %ss scrapes: "
            "the drift guard cannot judge it",
            ref.key, window, MIN_BLOCKS, scrape,
        )  # fmt: skip
    engine = EngineSelector(ref.namespace, production_deployment(ref.name, spec))
    seconds = block_seconds(window, scrape)
    blocks_read = runtime.acceptance_blocks.acceptance_blocks(
        engine, look.window_start, look.at, seconds
    )
    tails: tuple[StepHistogram, ...] | MetricError | None = None
    if latency_guarded(plan, state) is not None:  # only with something to judge them by
        tail_read = runtime.tail_blocks.tail_blocks(engine, look.window_start, look.at, seconds)
        blocks, tails = await asyncio.gather(blocks_read, tail_read)
    else:
        blocks = await blocks_read
    latency = (
        tails
        if tails is None or isinstance(tails, MetricError)
        else (ProductionLatency(look_at=look.at, blocks=tails))
    )
    if isinstance(blocks, MetricError):  # the look is read again: judge neither half now
        return blocks, None
    # judged once (marked by the apply that writes it): a failed latency read is skipped
    observed = ProductionAcceptance(look_at=look.at, blocks=blocks)
    judged = guard_check(plan, state, observed, now)
    if judged is not None:
        runtime.metrics.production_looked(ref.namespace, ref.name, judged[1], judged[2])
    return observed, latency
