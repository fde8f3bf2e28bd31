"""Gate evaluation: one look at a stage's observations yields a `GateResult`.

One module per gate type, each behind the `GateMeasure` Protocol and registered by type
(`registry`): `acceptance`, `accepted_length`, `tail_latency` (ServerStep in
`domain.step_histogram`), `speedup`, `error_rate`.

Verdicts, as Argo Rollouts' AnalysisRun names them:
- Successful: the confidence bound clears the threshold (alpha's lower bound >= minAlpha;
  the P99 ratio's upper bound <= 1 + tolerance; ...).
- Failed: the opposite bound is past the threshold (the candidate is worse, confidently).
- Inconclusive: the interval straddles the threshold, or too little data (no drafts is no
  data, never alpha 0; too few requests or time blocks for a cluster-robust bound).
- Error: a metric source failed (`MetricError`). Never a pass, never a failure; the stage
  counts consecutive errors against `analysis.consecutiveErrorLimit`.
A gate whose `methods` exclude the rollout's method, or a Speedup or ErrorRate gate under
Mirror traffic, is not judged: it stays Pending with a reason and is not enforced.

Error over repeated looks: each look's bounds are held at the error a group-sequential
spending function allows at that look's information time (measured / maxDurationSeconds,
see `domain.sequential`), with the gate's earlier looks of this stage run (kept in status,
`looks`) as the previous looks: the chance of any wrong verdict over the whole stage stays
at 1 - confidence per direction, split evenly over the stage's allowed inconclusive re-runs.
If status lost some looks (more than it keeps), the look spends only its own increment of
the budget (a Bonferroni bound on the increments), which is always valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from specdecode.api.analysis_rules import MIRROR_NOT_JUDGED
from specdecode.api.gate_spec import GateSpec, GateType, ItlDefinition
from specdecode.api.speculative import SpeculativeMethod
from specdecode.api.status import MAX_LOOKS_KEPT, GateLook, GateResult, GateVerdict
from specdecode.domain.gate_measures import Measurement
from specdecode.domain.gates import (  # noqa: F401 (each registers its gate type)
    acceptance,
    accepted_length,
    error_rate,
    speedup,
    tail_latency,
)
from specdecode.domain.gates.registry import Look, Need, measure_for
from specdecode.domain.observations import ServerStepHistograms, StageObservations
from specdecode.domain.sequential import critical_values, nominal_error, spent
from specdecode.domain.step_histogram import histogram_quantile

MIN_LOOK_ERROR = 1e-12


@dataclass(frozen=True)
class LookPlan:
    """Where the look stands in its stage: what the error spending needs.

    `measured_seconds` of `max_seconds` give the information time; `runs` is how many times
    the stage may run (inconclusive re-runs + 1), each spending its share of the error.
    """

    measured_seconds: float
    max_seconds: float
    runs: int = 1
    method: SpeculativeMethod | None = None
    mirror: bool = False
    # The stage's concurrency when the candidate's per-batch-size schedule turns speculation
    # off there (k = 0): it cannot pay where it does not speculate, so a Speedup gate asking
    # a gain (minSpeedup >= 1) is not judged; one asking "at most this much slower" is.
    not_speculating_at: int | None = None


def pending_result(gate: GateSpec) -> GateResult:
    """A gate's result before its first look."""
    return GateResult(
        name=gate.name,
        type=gate.type,
        dry_run=gate.dry_run,
        fail_only=gate.fail_only,
        itl_definition=_itl_definition(gate),
        reason="not evaluated yet",
    )


def not_judged_reason(gate: GateSpec, plan: LookPlan) -> str | None:
    """Why a gate is not judged in this rollout, or None when it is."""
    if not gate.applies_to(plan.method):
        method = plan.method.value if plan.method is not None else "plain decoding"
        judged_for = ", ".join(str(m) for m in gate.methods or [])
        return f"not judged for {method} (judged for {judged_for})"
    if plan.mirror and gate.type in MIRROR_NOT_JUDGED:
        return "not judged: Mirror traffic has no client timings or outcomes"
    if (
        gate.type is GateType.SPEEDUP
        and plan.not_speculating_at is not None
        and gate.number("min_speedup") >= 1.0
    ):
        # A gain cannot be asked where nothing is drafted; a minSpeedup under 1 (speculation
        # off must cost at most that much) is still judged there.
        return (
            f"not judged: the candidate's num_speculative_tokens_per_batch_size turns "
            f"speculation off at concurrency {plan.not_speculating_at}, where minSpeedup "
            f"{gate.number('min_speedup'):g} asks a gain (the tail and errors are still judged)"
        )
    return None


def stage_needs(gates: Sequence[GateSpec], plan: LookPlan) -> frozenset[Need]:
    """What to fetch for a stage: the union of what its measured gates declare.

    Measured: judged for this rollout (dry-run gates included, they are measured and
    reported); a gate not judged for the method or the traffic reads nothing.
    """
    measured = (gate for gate in gates if not_judged_reason(gate, plan) is None)
    return frozenset().union(*(measure_for(gate.type).needs(gate) for gate in measured))


def look_error(gate: GateSpec, previous: GateResult, plan: LookPlan) -> float:
    """The one-sided error this look's bounds may have (see the module docstring)."""
    alpha = (1.0 - gate.confidence) / max(1, plan.runs)
    horizon = max(plan.max_seconds, 1e-9)
    now = plan.measured_seconds / horizon
    if previous.look_count > len(previous.looks):
        # Older looks were dropped: spend only the increment since the last one kept. With
        # none kept (an edited or foreign status) what they spent is unknown: nothing left.
        last = previous.looks[-1].measured_seconds / horizon if previous.looks else None
        error = 0.0 if last is None else spent(alpha, now) - spent(alpha, last)
    else:
        times = (*(look.measured_seconds / horizon for look in previous.looks), now)
        error = nominal_error(critical_values(times, alpha)[-1])
    # A look with nothing left to spend (the same time again) may still measure and report,
    # with bounds so wide (z ~ 7) that they decide nothing.
    return max(error, MIN_LOOK_ERROR)


def evaluate_gate(
    gate: GateSpec,
    observations: StageObservations | None,
    previous: GateResult | None,
    now: datetime,
    plan: LookPlan,
) -> GateResult:
    """Look once: measure, judge against the bound, update the counters and the history."""
    before = previous if previous is not None else pending_result(gate)
    skipped = not_judged_reason(gate, plan)
    if skipped is not None:
        return before.model_copy(update={"reason": skipped, "measured_at": now})
    error = look_error(gate, before, plan)
    found = _measure(gate, observations, Look(error, plan.method, plan.mirror))
    history = _with_look(before, found, now, plan, error)
    if found.verdict is GateVerdict.ERROR:
        # Keep the last good numbers on display; only the verdict and reason change.
        return before.model_copy(
            update={
                "verdict": GateVerdict.ERROR,
                "reason": found.reason,
                "consecutive_errors": before.consecutive_errors + 1,
                "measured_at": now,
                "dry_run": gate.dry_run,
                "fail_only": gate.fail_only,
                **history,
            }
        )
    server_baseline, server_candidate = _server_cross_check(gate, observations)
    return GateResult(
        name=gate.name,
        type=gate.type,
        **measured_fields(found, GateResult),
        itl_definition=_itl_definition(gate),
        server_baseline_value=server_baseline,
        server_candidate_value=server_candidate,
        dry_run=gate.dry_run,
        fail_only=gate.fail_only,
        failures=before.failures + (found.verdict is GateVerdict.FAILED),
        inconclusives=before.inconclusives + (found.verdict is GateVerdict.INCONCLUSIVE),
        consecutive_errors=0,
        measured_at=now,
        **history,
    )


def _with_look(
    before: GateResult, found: Measurement, now: datetime, plan: LookPlan, error: float
) -> dict[str, object]:
    """The history fields after this look: bounded, oldest dropped first."""
    look = GateLook(
        measured_at=now,
        measured_seconds=plan.measured_seconds,
        **measured_fields(found, GateLook),
        error=error,
    )
    return {"looks": [*before.looks, look][-MAX_LOOKS_KEPT:], "look_count": before.look_count + 1}


def measured_fields(found: Measurement, into: type[BaseModel]) -> dict[str, Any]:
    """The Measurement's fields that the status model `into` also has, by name.

    One field table (Measurement's): a field added to both flows into status without a
    copy line to forget. `reason` stays out of a look (GateLook has none).
    """
    return {
        field.name: _status_value(getattr(found, field.name))
        for field in fields(Measurement)
        if field.name in into.model_fields
    }


def _status_value(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def _measure(gate: GateSpec, observations: StageObservations | None, look: Look) -> Measurement:
    """The registered measure of the gate's type; no observations for this stage is no data."""
    if observations is None:
        return Measurement(GateVerdict.INCONCLUSIVE, "no data for this stage yet")
    return measure_for(gate.type).measure(gate, observations, look)


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
    q = gate.number("quantile")
    return histogram_quantile(server.baseline, q), histogram_quantile(server.candidate, q)


def _itl_definition(gate: GateSpec) -> ItlDefinition | None:
    if gate.type is not GateType.TAIL_LATENCY:
        return None
    return gate.effective_itl_definition
