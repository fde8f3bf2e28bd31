"""One trial look's figures, measured by the same gate modules a rollout is judged by.

Why through the gates: a tuning must recommend what a rollout would promote, so each
figure (TPOT speedup, P99 chunk gap, error rate, acceptance) comes from the gate of the
same name at the cell's error level; a figure it cannot bound yet makes the look "not
measured" with the reason. Per figure: docs/internals.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from specdecode.api.gate_spec import GateSpec, ItlDefinition
from specdecode.api.speculative import SpeculativeMethod
from specdecode.api.status import GateVerdict
from specdecode.domain.gate_boundary import gate_params
from specdecode.domain.gate_measures import (
    SATURATED,  # a lagging client's refusal
    Measurement,
)
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import TuningFigure, measure_for, tuning_type
from specdecode.domain.gates.registry import Look
from specdecode.domain.observations import (
    AcceptanceCounts,
    LatencySamples,
    MetricError,
    StageObservations,
)
from specdecode.domain.stats import Interval
from specdecode.domain.tuning.cells import CellMeasurement

# Blocks per side before a figure is bounded: fewer than a rollout's 20, because a trial's
# looks are short and Student's t at few blocks already widens the bound for it.
MIN_BLOCKS = 4
FIXED_K_METHODS = frozenset(
    {
        SpeculativeMethod.EAGLE,
        SpeculativeMethod.EAGLE3,
        SpeculativeMethod.MTP,
        SpeculativeMethod.DRAFT_MODEL,
    }
)


@dataclass(frozen=True)
class TrialWindow:
    """What one look of a cell saw: both sides' load windows and the candidate's counters."""

    baseline: LatencySamples | MetricError | None
    candidate: LatencySamples | MetricError | None
    acceptance: AcceptanceCounts | MetricError | None = None


def look_error(z: float) -> float:
    """The one-sided error of a bound at critical value z."""
    return 0.0 if math.isinf(z) else 1.0 - NormalDist().cdf(z)


def _gate(figure: TuningFigure, **settings: object) -> GateParams:
    """The gate a tuning measures `figure` with (the type declaring it, `tuning_figure`)."""
    gate_type = tuning_type(figure)
    return gate_params(
        GateSpec.model_validate(
            {
                "name": gate_type.value.lower(),
                "type": gate_type,
                "min_samples": MIN_BLOCKS,
                **settings,
            }
        )
    )


SPEEDUP = _gate(TuningFigure.SPEEDUP)
TAIL_QUANTILE = 0.99
TAIL = _gate(TuningFigure.TAIL, quantile=TAIL_QUANTILE, itl_definition=ItlDefinition.PER_CHUNK)
ERRORS = _gate(TuningFigure.ERRORS)
ALPHA = _gate(TuningFigure.ALPHA, min_draft_tokens=1)
TOKENS_PER_STEP = _gate(TuningFigure.ACCEPTED_LENGTH)


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


def measure_cell(window: TrialWindow, z: float, method: SpeculativeMethod) -> CellMeasurement | str:
    """The cell's figures at critical value z, or why this look cannot bound them yet."""
    seen = StageObservations(
        stage_name="trial",
        candidate_acceptance=window.acceptance,
        baseline_latency=window.baseline,
        candidate_latency=window.candidate,
    )
    look = Look(error=look_error(z), method=method)
    required = {}
    for name, gate in (("speedup", SPEEDUP), ("tail", TAIL), ("errors", ERRORS)):
        measured = measure_for(gate.type).measure(gate, seen, look)
        interval = _interval(measured)
        if interval is None and gate is TAIL and not measured.reason.startswith(SATURATED):
            interval = _unbounded_tail(window)
        if interval is None:
            return f"{name}: {measured.reason}"
        required[name] = interval
    alpha = None
    if method in FIXED_K_METHODS:
        alpha = _interval(measure_for(ALPHA.type).measure(ALPHA, seen, look))
    length = _interval(measure_for(TOKENS_PER_STEP.type).measure(TOKENS_PER_STEP, seen, look))
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


__all__ = ["MIN_BLOCKS", "TrialWindow", "look_error", "measure_cell"]
