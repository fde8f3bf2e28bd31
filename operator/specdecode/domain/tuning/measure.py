"""One trial look's figures, measured by the same gate modules a rollout is judged by.

Why through the gates: a tuning must recommend what a rollout would promote, so each
figure (TPOT speedup, P99 chunk gap, error rate, acceptance) comes from the gate of the
same name at the cell's error level; a figure it cannot bound yet makes the look "not
measured" with the reason. Per figure: docs/internals.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

from specdecode.domain.gate_measures import (
    SATURATED,  # a lagging client's refusal
    Measurement,
)
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import TuningFigure, measure_for
from specdecode.domain.gates.registry import Look
from specdecode.domain.observations import (
    AcceptanceCounts,
    LatencySamples,
    MetricError,
    StageObservations,
)
from specdecode.domain.stats import Interval
from specdecode.domain.tuning.cells import CellMeasurement
from specdecode.domain.tuning.model import Candidate
from specdecode.vocabulary import GateVerdict, ItlDefinition

# Blocks per side before a figure is bounded: fewer than a rollout's 20, because a trial's
# looks are short and Student's t at few blocks already widens the bound for it.
MIN_BLOCKS = 4
TAIL_QUANTILE = 0.99
# Each figure's gate settings beyond its type's defaults (`reconciler.tuning_boundary`
# makes the gates from them, at MIN_BLOCKS, into `TuningPlan.gates`).
GATE_SETTINGS: Mapping[TuningFigure, Mapping[str, object]] = {
    TuningFigure.TAIL: {"quantile": TAIL_QUANTILE, "itl_definition": ItlDefinition.PER_CHUNK},
    TuningFigure.ALPHA: {"min_draft_tokens": 1},
}


@dataclass(frozen=True)
class TrialWindow:
    """What one look of a cell saw: both sides' load windows and the candidate's counters."""

    baseline: LatencySamples | MetricError | None
    candidate: LatencySamples | MetricError | None
    acceptance: AcceptanceCounts | MetricError | None = None


def look_error(z: float) -> float:
    """The one-sided error of a bound at critical value z."""
    return 0.0 if math.isinf(z) else 1.0 - NormalDist().cdf(z)


def _interval(measurement: Measurement) -> Interval | None:
    if measurement.value is None or measurement.lower_bound is None:
        return None
    if measurement.upper_bound is None or measurement.verdict is GateVerdict.ERROR:
        return None
    return Interval(
        measurement.value,
        measurement.lower_bound,
        measurement.upper_bound,
        measurement.samples or 0,
    )


def _unbounded_tail(window: TrialWindow) -> Interval | None:
    """The P99 ratio's point estimate without bounds, while too few blocks hold P99 samples
    (the gate wants 30): a constraint that is not yet confirmed (its upper bound is
    infinite), so the cell can neither win a load nor dominate another on it yet."""
    baseline, candidate = window.baseline, window.candidate
    if not isinstance(baseline, LatencySamples) or not isinstance(candidate, LatencySamples):
        return None
    base, cand = baseline.per_chunk_itl, candidate.per_chunk_itl
    if base.total == 0 or cand.total == 0:
        return None
    ratio = cand.quantile(TAIL_QUANTILE) / base.quantile(TAIL_QUANTILE)
    return Interval(ratio, 0.0, math.inf, min(base.total, cand.total))


def measure_cell(
    window: TrialWindow,
    z: float,
    candidate: Candidate,
    gates: Mapping[TuningFigure, GateParams],
) -> CellMeasurement | str:
    """The cell's figures at critical value z, or why this look cannot bound them yet;
    `gates` are the plan's (`TuningPlan.gates`), one a figure."""
    seen = StageObservations(
        stage_name="trial",
        candidate_acceptance=window.acceptance,
        baseline_latency=window.baseline,
        candidate_latency=window.candidate,
    )
    look = Look(error=look_error(z), method=candidate.method)

    def measured_by(figure: TuningFigure) -> Measurement:
        gate = gates[figure]
        return measure_for(gate.type).measure(gate, seen, look)

    required = {}
    for figure in (TuningFigure.SPEEDUP, TuningFigure.TAIL, TuningFigure.ERRORS):
        name = figure.value
        measured = measured_by(figure)
        interval = _interval(measured)
        tail = figure is TuningFigure.TAIL
        if interval is None and tail and not measured.reason.startswith(SATURATED):
            interval = _unbounded_tail(window)
        if interval is None:
            return f"{name}: {measured.reason}"
        required[name] = interval
    alpha = None
    if candidate.fixed_k:
        alpha = _interval(measured_by(TuningFigure.ALPHA))
    length = _interval(measured_by(TuningFigure.ACCEPTED_LENGTH))
    speedup = required["speedup"]
    return CellMeasurement(
        objective=speedup,  # both objectives rank on this one bound (module docstring)
        tpot_speedup=speedup,
        throughput_ratio=speedup,
        tail_ratio=required["tail"],
        error_rate=required["errors"],
        alpha=alpha,
        accepted_length=length,
    )


__all__ = ["GATE_SETTINGS", "MIN_BLOCKS", "TrialWindow", "look_error", "measure_cell"]
