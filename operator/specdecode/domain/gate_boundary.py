"""Where the gates meet the status: GateParams in, the status' GateRecord out.

Why one module: the gates and the statistics know nothing of the status, so the record a
look leaves goes by field name, from the one table each side already has: no field is
copied by hand. The stage's bookkeeping (failures, inconclusives, errors in a row, the
bounded look history) is status, so it lives here too. The wire side (GateSpec in, the
kernel's answer) is `adapters.gate_boundary`'s. More: docs/internals.md.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from specdecode.domain.certification import JUDGED, Certification
from specdecode.domain.gate_measures import Measurement
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import LookPlan, error_at_look, measure
from specdecode.domain.observations import StageObservations
from specdecode.domain.stage_state import GateLookRecord, GateRecord
from specdecode.vocabulary import MAX_LOOKS_KEPT, GateVerdict


def pending_result(gate: GateParams) -> GateRecord:
    """A gate's result before its first look."""
    return GateRecord(**_identity(gate), reason="not evaluated yet")


def look_error(gate: GateParams, previous: GateRecord, plan: LookPlan) -> float:
    """The one-sided error this look may spend, given the stage run's looks in status."""
    return error_at_look(
        gate.confidence,
        plan,
        [look.measured_seconds for look in previous.looks],
        some_lost=previous.look_count > len(previous.looks),
    )


def evaluate_gate(
    params: GateParams,
    observations: StageObservations | None,
    previous: GateRecord | None,
    now: datetime,
    plan: LookPlan,
    certification: Certification = JUDGED,
) -> GateRecord:
    """Look once: measure, judge against the bound, update the counters and the history;
    a gate the kernel does not judge here (`api.certify`) keeps its result, with the reason."""
    before = previous if previous is not None else pending_result(params)
    if not certification.judged:
        return before.model_copy(update={"reason": certification.reason, "measured_at": now})
    error = look_error(params, before, plan)
    found = measure(params, observations, plan, error)
    history = _with_look(before, found, now, plan, error)
    if found.verdict is GateVerdict.ERROR:
        # Keep the last good numbers on display; only the verdict and reason change.
        return before.model_copy(
            update={
                "verdict": GateVerdict.ERROR,
                "reason": found.reason,
                "close_call": False,
                "consecutive_errors": before.consecutive_errors + 1,
                "measured_at": now,
                "dry_run": params.dry_run,
                "fail_only": params.fail_only,
                **history,
            }
        )
    return GateRecord(
        **_identity(params),
        **measured_fields(found, GateRecord),
        failures=before.failures + (found.verdict is GateVerdict.FAILED),
        inconclusives=before.inconclusives + (found.verdict is GateVerdict.INCONCLUSIVE),
        consecutive_errors=0,
        measured_at=now,
        **history,
    )


def _identity(params: GateParams) -> dict[str, Any]:
    """The GateParams fields and own settings GateRecord also has (name, type, flags, the
    ITL definition), by name: a setting shows only on a gate whose type has it."""
    shared = {field.name: getattr(params, field.name) for field in fields(GateParams)}
    return {
        name: value
        for name, value in (*shared.items(), *params.settings)
        if name in GateRecord.model_fields
    }


def _with_look(
    before: GateRecord, found: Measurement, now: datetime, plan: LookPlan, error: float
) -> dict[str, object]:
    """The history fields after this look: bounded, oldest dropped first."""
    look = GateLookRecord(
        measured_at=now,
        measured_seconds=plan.measured_seconds,
        **measured_fields(found, GateLookRecord),
        error=error,
    )
    return {"looks": [*before.looks, look][-MAX_LOOKS_KEPT:], "look_count": before.look_count + 1}


def measured_fields(found: Measurement, into: type[BaseModel]) -> dict[str, Any]:
    """The Measurement's fields that the status model `into` also has, by name.

    One field table (Measurement's): a field added to both flows into status without a
    copy line to forget. `reason` stays out of a look (GateLookRecord has none).
    """
    return {
        field.name: _status_value(getattr(found, field.name))
        for field in fields(Measurement)
        if field.name in into.model_fields
    }


def _status_value(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value
