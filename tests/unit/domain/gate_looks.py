"""A gate's look on its wire spec, as the tests write gates: `GateSpec` converted first.

Why: `domain.gate_boundary` reads `GateParams` (the domain imports no wire model);
observe converts each gate once (`adapters.gate_boundary.gate_params`). The tests write
gates as users do, so these helpers convert them the same way before the domain looks.
"""

from __future__ import annotations

from datetime import datetime

from specdecode.adapters.gate_boundary import gate_params
from specdecode.api.gate_spec import GateSpec
from specdecode.domain import gate_boundary
from specdecode.domain.certification import JUDGED, Certification
from specdecode.domain.gates import LookPlan
from specdecode.domain.observations import StageObservations
from specdecode.domain.stage_state import GateRecord


def evaluate_gate(
    gate: GateSpec,
    observations: StageObservations | None,
    previous: GateRecord | None,
    now: datetime,
    plan: LookPlan,
    certification: Certification = JUDGED,
) -> GateRecord:
    """`gate_boundary.evaluate_gate` on the wire gate's parameters."""
    params = gate_params(gate)
    return gate_boundary.evaluate_gate(params, observations, previous, now, plan, certification)


def look_error(gate: GateSpec, previous: GateRecord, plan: LookPlan) -> float:
    """`gate_boundary.look_error` on the wire gate's parameters."""
    return gate_boundary.look_error(gate_params(gate), previous, plan)


def pending_result(gate: GateSpec) -> GateRecord:
    """`gate_boundary.pending_result` on the wire gate's parameters."""
    return gate_boundary.pending_result(gate_params(gate))
