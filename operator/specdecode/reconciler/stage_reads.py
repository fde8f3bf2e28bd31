"""A look's reads from Prometheus: the engines' own counters and histograms for the stage.

Only what the stage's measured gates declare (`observations_needed`) is asked: the
candidate's acceptance counters, both engines' step-ITL histograms (ServerStep
TailLatency gates), and, for Mirror traffic, both engines' finished requests by reason
(its ErrorRate evidence, since its responses never reach the operator). The load pods'
and the splitter's reports are read beside these (`reconciler.load`,
`reconciler.splitter_reports`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Set
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from specdecode.adapters.kube.rollouts import RolloutRef
from specdecode.adapters.metrics import EngineSelector
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.child_names import child_name
from specdecode.domain.gates.registry import Need
from specdecode.domain.observations import (
    AcceptanceCounts,
    ChildRole,
    EngineOutcomePair,
    MetricError,
    ServerStepHistograms,
)
from specdecode.reconciler.runtime import Runtime

T = TypeVar("T")


@dataclass(frozen=True)
class StageMetrics:
    """What Prometheus said for one look (None: not asked)."""

    acceptance: AcceptanceCounts | MetricError | None = None
    server_step_itl: ServerStepHistograms | MetricError | None = None
    engine_outcomes: EngineOutcomePair | MetricError | None = None


async def read_stage_metrics(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    start: datetime,
    needs: Set[Need],
) -> StageMetrics:
    """The engine metrics the stage's gates need, over the window since `start`."""
    acceptance = None
    if Need.ACCEPTANCE_COUNTERS in needs:
        engine = EngineSelector(ref.namespace, child_name(ref.name, ChildRole.CANDIDATE))
        acceptance = await runtime.acceptance.acceptance(engine, start, runtime.clock.now())
    server_step_itl = None
    if Need.SERVER_STEP_HISTOGRAMS in needs:
        server_step_itl = await _server_step_itl(runtime, ref, start)
    outcomes = None
    if Need.ENGINE_OUTCOMES in needs and spec.analysis.traffic.server_side_mirror:
        outcomes = await engine_outcomes(runtime, ref, spec, start)
    return StageMetrics(acceptance, server_step_itl, outcomes)


async def _server_step_itl(
    runtime: Runtime, ref: RolloutRef, start: datetime
) -> ServerStepHistograms | MetricError:
    """Both engines' step-ITL histograms over the window, from vLLM's own metrics.

    Judged by ServerStep TailLatency gates (Mirror traffic), a cross-check for the others.
    """
    end = runtime.clock.now()
    both = await _both_engines(
        ref, lambda engine: runtime.step_latency.step_itl_histogram(engine, start, end)
    )
    if isinstance(both, MetricError):
        return both
    return ServerStepHistograms(baseline=both[0], candidate=both[1])


async def engine_outcomes(
    runtime: Runtime, ref: RolloutRef, spec: SpecDecodeRolloutSpec, start: datetime
) -> EngineOutcomePair | MetricError:
    """Both shadow engines' finished requests by reason over the window (vLLM's counter).

    Read only for Mirror traffic, whose responses never reach the operator: the engines'
    count is its ErrorRate evidence (`domain.gates.mirror_outcomes`).
    """
    end = runtime.clock.now()
    both = await _both_engines(
        ref, lambda engine: runtime.request_outcomes.request_outcomes(engine, start, end)
    )
    if isinstance(both, MetricError):
        return both
    share = spec.analysis.traffic.mirror_percent / 100
    return EngineOutcomePair(baseline=both[0], candidate=both[1], mirror_share=share)


async def _both_engines(
    ref: RolloutRef, read: Callable[[EngineSelector], Awaitable[T | MetricError]]
) -> tuple[T, T] | MetricError:
    """One read of the baseline's and the candidate's engine at once: both answers, or the
    first error (a look never judges one side's data alone)."""
    baseline, candidate = await asyncio.gather(
        *(
            read(EngineSelector(ref.namespace, child_name(ref.name, role)))
            for role in (ChildRole.BASELINE, ChildRole.CANDIDATE)
        )
    )
    if isinstance(baseline, MetricError):
        return baseline
    if isinstance(candidate, MetricError):
        return candidate
    return baseline, candidate
