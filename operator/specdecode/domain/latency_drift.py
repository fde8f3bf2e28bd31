"""Latency drift: is production's server-side tail surely past the line the analysis drew?

Why a module of its own: the acceptance half (`drift`) cannot see a config whose alpha
holds but whose verify steps got slow. Pure: from production's step-ITL histogram in time
blocks against the promoted config's own figure x (1 + tolerance), Drifted, Below or nothing.
The statistic, its unit and its limits: docs/internals.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from specdecode.domain.drift import MIN_BLOCKS, block_ratio
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import Headline, is_headline
from specdecode.domain.guard_model import GuardPlan, GuardState
from specdecode.domain.observations import StepHistogram

MIN_TAIL_EXPECTED = 20.0  # observations above the edge expected at the allowed share


@dataclass(frozen=True)
class ProductionLatency:
    """What the reconciler read for one guard look: production's step-ITL histogram per
    time block (all its pods) up to `look_at`."""

    look_at: datetime
    blocks: tuple[StepHistogram, ...]


@dataclass(frozen=True)
class LatencyReference:
    """The analysis' figure production's tail is held to, and how it was judged."""

    seconds: float  # the candidate's server step-ITL q-quantile at the stage
    baseline_seconds: float | None  # the baseline's, for the message
    quantile: float
    error: float  # one-sided, per window (1 - the gate's confidence)
    stage: str
    gate: str


class LatencyVerdict(StrEnum):
    """What one look says about production's tail."""

    NONE = "None"  # too little data, no edge, or the bound straddles 1 - q
    DRIFTED = "Drifted"  # the share above the edge is surely more than 1 - q
    BELOW = "Below"  # surely less: the tail is back under the line


@dataclass(frozen=True)
class LatencyCheck:
    """A look's verdict with its numbers (None where there was too little data)."""

    verdict: LatencyVerdict
    line: float  # reference x (1 + tolerance), seconds
    edge: float | None = None  # the bucket edge judged (>= line)
    share: float | None = None  # production's share of observations above the edge
    lower: float | None = None
    upper: float | None = None
    allowed: float = 0.0  # 1 - q
    blocks: int = 0
    observations: float = 0.0


def latency_reference(plan: GuardPlan, state: GuardState) -> LatencyReference | None:
    """The last stage's enforced TailLatency gate that recorded a server-side candidate
    figure; None when none did (no TailLatency gate, no step-ITL series, no analysis)."""
    for stage, results in reversed(state.stages):
        for result in results:
            figure = result.server_candidate_value
            if not is_headline(result.type, Headline.TAIL) or result.dry_run:
                continue
            if figure is None or not figure > 0 or math.isinf(figure):
                continue
            gate = _gate_params(plan, stage, result.name)
            return LatencyReference(
                seconds=figure,
                baseline_seconds=result.server_baseline_value,
                quantile=gate.number("quantile"),
                error=1.0 - gate.confidence,
                stage=stage,
                gate=result.name,
            )
    return None


def latency_guarded(plan: GuardPlan, state: GuardState) -> LatencyReference | None:
    """The figure production's tail is judged against, when the latency half judges at
    all (`guard.latency` on and an analysis left a figure); None: nothing to read for it."""
    return latency_reference(plan, state) if plan.latency else None


def _gate_params(plan: GuardPlan, stage: str, gate: str) -> GateParams:
    for name, gates in plan.stages:
        if name == stage:
            for found in gates:
                if found.name == gate and is_headline(found.type, Headline.TAIL):
                    return found
    return plan.default_tail


def tail_edge(blocks: list[StepHistogram], line: float) -> float | None:
    """The first finite bucket edge at or above `line` that every block has."""
    common = set.intersection(*(set(b.upper_bounds) for b in blocks)) if blocks else set()
    edges = sorted(e for e in common if e >= line and not math.isinf(e))
    return edges[0] if edges else None


def _above(block: StepHistogram, edge: float) -> float:
    """Observations above `edge` in one block (increases, so clipped to [0, total])."""
    total = block.cumulative_counts[-1]
    at_or_below = block.cumulative_counts[block.upper_bounds.index(edge)]
    return max(0.0, total - min(total, max(0.0, at_or_below)))


def check_latency_drift(
    blocks: tuple[StepHistogram, ...],
    reference: LatencyReference,
    tolerance: float,
    times: tuple[float, ...],
) -> LatencyCheck:
    """Judge production's share above the line's edge against 1 - q at the look
    `times[-1]` of its window (see the module docstring)."""
    line = reference.seconds * (1.0 + tolerance)
    allowed = 1.0 - reference.quantile
    used = [b for b in blocks if b.cumulative_counts and b.cumulative_counts[-1] > 0]
    total = sum(b.cumulative_counts[-1] for b in used)
    none = LatencyCheck(
        LatencyVerdict.NONE, line, allowed=allowed, blocks=len(used), observations=total
    )
    edge = tail_edge(used, line)
    if len(used) < MIN_BLOCKS or total < MIN_TAIL_EXPECTED / allowed or not times:
        return none
    if edge is None:
        return none
    ratio = block_ratio(
        [_above(b, edge) for b in used],
        [b.cumulative_counts[-1] for b in used],
        reference.error,
        times,
    )
    verdict = LatencyVerdict.NONE
    if ratio.lower > allowed:
        verdict = LatencyVerdict.DRIFTED
    elif ratio.upper < allowed:
        verdict = LatencyVerdict.BELOW
    return LatencyCheck(
        verdict, line, edge, ratio.value, ratio.lower, ratio.upper, allowed, len(used), total
    )
