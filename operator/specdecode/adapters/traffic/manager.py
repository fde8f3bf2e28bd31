"""Owns the background shadow-traffic tasks: at most one per rollout, matching its plan.

The reconciler says which plan should run (`ensure`); the manager starts, replaces or stops
the task so reality matches, and serves its measurements. It lives in kopf's memo, one per
operator process; nothing about it survives a restart, and nothing needs to: the stage's
window is in the rollout's status, and a restarted operator simply measures again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from specdecode.adapters.traffic.protocol import ShadowTraffic
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.observations import LatencySamples

log = logging.getLogger(__name__)


@dataclass
class _Run:
    plan: TrafficPlan
    source: ShadowTraffic
    task: asyncio.Task[None]


class TrafficManager:
    """Background shadow traffic per rollout, keyed by "namespace/name"."""

    def __init__(self) -> None:
        self._runs: dict[str, _Run] = {}

    def plan(self, key: str) -> TrafficPlan | None:
        """The plan running for this rollout, if any."""
        run = self._runs.get(key)
        return run.plan if run else None

    async def ensure(
        self, key: str, plan: TrafficPlan | None, start: Callable[[], Awaitable[ShadowTraffic]]
    ) -> None:
        """Make the running traffic match `plan` (None stops it)."""
        current = self._runs.get(key)
        if current is not None and current.plan == plan and not current.task.done():
            return
        await self.stop(key)
        if plan is None:
            return
        source = await start()
        task = asyncio.create_task(source.run(), name=f"shadow-traffic {key} {plan.stage_name}")
        task.add_done_callback(functools.partial(_log_end, key))
        self._runs[key] = _Run(plan=plan, source=source, task=task)

    def snapshot(
        self, key: str, stage_name: str, since: float, now: float
    ) -> tuple[LatencySamples, LatencySamples] | None:
        """(baseline, candidate) samples of the running stage, None if another stage runs."""
        run = self._runs.get(key)
        if run is None or run.plan.stage_name != stage_name:
            return None
        return run.source.snapshot(since, now)

    def error(self, key: str) -> str | None:
        """Why the rollout's traffic cannot run, if it cannot."""
        run = self._runs.get(key)
        return run.source.error if run else None

    async def stop(self, key: str) -> None:
        """Cancel the rollout's traffic and wait for its requests to be dropped."""
        run = self._runs.pop(key, None)
        if run is None:
            return
        run.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await run.task

    async def stop_all(self) -> None:
        """Cancel every rollout's traffic (operator shutdown)."""
        for key in list(self._runs):
            await self.stop(key)


def _log_end(key: str, task: asyncio.Task[None]) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        log.error("shadow traffic for %s failed: %r", key, error)
