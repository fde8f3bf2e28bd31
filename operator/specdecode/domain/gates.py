"""Gate evaluation: one look at a stage's observations yields a `GateResult`.

Verdicts, as Argo Rollouts' AnalysisRun names them:
- Successful: the confidence bound clears the threshold (alpha's lower bound >= minAlpha;
  the P99 ratio's upper bound <= 1 + tolerance; ...).
- Failed: the opposite bound is past the threshold (the candidate is worse, confidently).
- Inconclusive: the interval straddles the threshold, or too little data (no drafts is no
  data, never alpha 0; too few latency samples for the order statistics to exist; with
  itlDefinition ServerStep, quantiles whose bucket-edge bounds are too far apart).
- Error: a metric source failed (`MetricError`). Never a pass, never a failure; the stage
  counts consecutive errors against `analysis.consecutiveErrorLimit`.

Each look spends `(1 - confidence) / looks` of the gate's error (see `stats`), where
`looks` is the most evaluations the stage (and its inconclusive re-runs) can take, so
repeated looks do not inflate the wrong-promotion or wrong-rollback rate. Counters
(`failures`, `inconclusives`, `consecutiveErrors`) carry over from the previous result.
"""

from __future__ import annotations

from datetime import datetime

from specdecode.api.gate_spec import GateSpec, GateType, ItlDefinition
from specdecode.api.status import GateResult, GateVerdict
from specdecode.domain.gate_measures import Measurement, measure_acceptance, measure_error_rate
from specdecode.domain.latency_gates import (
    DEFAULT_QUANTILE,
    measure_speedup,
    measure_tail_latency,
)
from specdecode.domain.observations import ServerStepHistograms, StageObservations
from specdecode.domain.stats import per_look_error
from specdecode.domain.step_histogram import histogram_quantile, measure_server_step_tail


def pending_result(gate: GateSpec) -> GateResult:
    """A gate's result before its first look."""
    return GateResult(
        name=gate.name,
        type=gate.type,
        dry_run=gate.dry_run,
        itl_definition=_itl_definition(gate),
        reason="not evaluated yet",
    )


def evaluate_gate(
    gate: GateSpec,
    observations: StageObservations | None,
    previous: GateResult | None,
    now: datetime,
    looks: int,
) -> GateResult:
    """Look once: measure, judge against the bound, and update the counters."""
    before = previous if previous is not None else pending_result(gate)
    error = per_look_error(gate.confidence, looks)
    found = _measure(gate, observations, error)
    if found.verdict is GateVerdict.ERROR:
        # Keep the last good numbers on display; only the verdict and reason change.
        return before.model_copy(
            update={
                "verdict": GateVerdict.ERROR,
                "reason": found.reason,
                "consecutive_errors": before.consecutive_errors + 1,
                "measured_at": now,
                "dry_run": gate.dry_run,
            }
        )
    server_baseline, server_candidate = _server_cross_check(gate, observations)
    return GateResult(
        name=gate.name,
        type=gate.type,
        verdict=found.verdict,
        reason=found.reason,
        value=found.value,
        lower_bound=found.lower_bound,
        upper_bound=found.upper_bound,
        threshold=found.threshold,
        samples=found.samples,
        baseline_value=found.baseline_value,
        candidate_value=found.candidate_value,
        mean_acceptance_length=found.mean_acceptance_length,
        acceptance_per_position=list(found.acceptance_per_position),
        itl_definition=_itl_definition(gate),
        server_baseline_value=server_baseline,
        server_candidate_value=server_candidate,
        dry_run=gate.dry_run,
        failures=before.failures + (found.verdict is GateVerdict.FAILED),
        inconclusives=before.inconclusives + (found.verdict is GateVerdict.INCONCLUSIVE),
        consecutive_errors=0,
        measured_at=now,
    )


def _measure(gate: GateSpec, observations: StageObservations | None, error: float) -> Measurement:
    """Dispatch on the gate type; no observations for this stage is no data."""
    if observations is None:
        return Measurement(GateVerdict.INCONCLUSIVE, "no data for this stage yet")
    if gate.type is GateType.ACCEPTANCE:
        return measure_acceptance(gate, observations.candidate_acceptance, error)
    if gate.type is GateType.TAIL_LATENCY and gate.itl_definition is ItlDefinition.SERVER_STEP:
        return measure_server_step_tail(gate, observations.server_step_itl, error)
    if gate.type is GateType.TAIL_LATENCY:
        return measure_tail_latency(
            gate, observations.baseline_latency, observations.candidate_latency, error
        )
    if gate.type is GateType.SPEEDUP:
        return measure_speedup(
            gate, observations.baseline_latency, observations.candidate_latency, error
        )
    return measure_error_rate(gate, observations.candidate_latency, error)


def _server_cross_check(
    gate: GateSpec, observations: StageObservations | None
) -> tuple[float | None, float | None]:
    """vLLM's step-ITL quantiles (interpolated, as Prometheus does) at a TailLatency gate's q.

    Reported next to every TailLatency gate's numbers: the client's exact timings and the
    server's histogram should tell the same story; a ServerStep gate is judged on the latter.
    """
    server = observations.server_step_itl if observations is not None else None
    if gate.type is not GateType.TAIL_LATENCY or not isinstance(server, ServerStepHistograms):
        return None, None
    q = gate.quantile or DEFAULT_QUANTILE
    return histogram_quantile(server.baseline, q), histogram_quantile(server.candidate, q)


def _itl_definition(gate: GateSpec) -> ItlDefinition | None:
    if gate.type is not GateType.TAIL_LATENCY:
        return None
    return gate.itl_definition or ItlDefinition.PER_TOKEN
