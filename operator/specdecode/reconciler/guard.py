"""Read production's counters for the drift guard's look, when one is due.

Why here and not in `reconcile`: the guard is the one read a steady (Promoted) rollout
makes, and it must stay small: nothing at all while the guard has nothing to judge
(disabled, plain decoding, any other phase, before the first look), else one range query
per counter for the latest look of the grid (`domain.drift.GuardGrid`), evaluated at that
look's instant and not at `now`, and each look is judged once (`runtime.guard_judged`):
a reconcile that a watch event causes between looks asks nothing, and a look is never
judged again on data that arrived later (which would spend error the boundary did not
budget). A window too short for four-scrape blocks is said once in the log.
The look's numbers also go to the `specdecode_production_alpha` gauge (a gauge, not a
status write).
"""

from __future__ import annotations

import logging
from datetime import datetime

from specdecode.adapters.metrics import EngineSelector
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.drift import MIN_BLOCKS, ProductionAcceptance, block_seconds, can_judge
from specdecode.domain.guarding import guard_check, guard_grid
from specdecode.domain.observations import MetricError
from specdecode.reconciler.apply import RolloutRef
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.workload import production_deployment

LOG = logging.getLogger(__name__)


async def observe_production_acceptance(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    status: SpecDecodeRolloutStatus,
    now: datetime,
) -> ProductionAcceptance | MetricError | None:
    """Production's blocks for the look due at `now`; None when no look is due."""
    grid = guard_grid(spec, status)
    look = grid.latest(now) if grid is not None else None
    if look is None or runtime.guard_judged.get(ref.key) == look.at:
        return None
    scrape = runtime.settings.engine_scrape_interval_seconds
    window = spec.guard.window_seconds
    if not can_judge(window, scrape) and ref.key not in runtime.guard_blind:
        runtime.guard_blind.add(ref.key)
        LOG.warning(
            "%s: guard.windowSeconds %s holds fewer than %d blocks of four %ss scrapes: "
            "the drift guard cannot judge it",
            ref.key, window, MIN_BLOCKS, scrape,
        )  # fmt: skip
    engine = EngineSelector(ref.namespace, production_deployment(ref.name, spec))
    blocks = await runtime.acceptance_blocks.acceptance_blocks(
        engine, look.window_start, look.at, block_seconds(window, scrape)
    )
    if isinstance(blocks, MetricError):
        return blocks
    runtime.guard_judged[ref.key] = look.at
    observed = ProductionAcceptance(look_at=look.at, blocks=blocks)
    judged = guard_check(spec, status, observed, now)
    if judged is not None:
        runtime.metrics.production_looked(ref.namespace, ref.name, judged[1], judged[2])
    return observed
