"""Short strings for `kubectl get sdr` columns, from the latest gate results in status.

alpha: "0.71 [0.68,0.74]" (point estimate and confidence bounds of the latest acceptance
look); itlRatio: "1.04<=1.10" (candidate/baseline quantile ratio against 1 + tolerance;
">" once it failed, "~" while undecided).
"""

from __future__ import annotations

from specdecode.domain.gate_measures import relation
from specdecode.domain.gates import Headline, is_headline, measure_for
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.stage_state import GateRecord


def _latest(status: RolloutState, headline: Headline) -> GateRecord | None:
    """The most recent result with a value of the gate type whose results are `headline`,
    over every stage."""
    found: GateRecord | None = None
    for stage in status.stages:
        for gate in stage.gates:
            if (
                not is_headline(gate.type, headline)
                or gate.value is None
                or gate.measured_at is None
            ):
                continue
            if found is None or found.measured_at is None or gate.measured_at >= found.measured_at:
                found = gate
    return found


def alpha_column(status: RolloutState) -> str | None:
    """Latest alpha with its bounds, or None before the first measurement."""
    gate = _latest(status, Headline.ALPHA)
    if gate is None or gate.value is None:
        return None
    if gate.lower_bound is None or gate.upper_bound is None:
        return f"{gate.value:.2f}"
    return f"{gate.value:.2f} [{gate.lower_bound:.2f},{gate.upper_bound:.2f}]"


def itl_ratio_column(status: RolloutState) -> str | None:
    """Latest tail-latency ratio against its threshold, or None before the first one."""
    gate = _latest(status, Headline.TAIL)
    if gate is None or gate.value is None:
        return None
    if gate.threshold is None:
        return f"{gate.value:.2f}"
    compared = relation(gate.verdict, measure_for(gate.type).higher_is_better)
    return f"{gate.value:.2f}{compared}{gate.threshold:.2f}"


def with_display(status: RolloutState) -> RolloutState:
    """The status with its display columns recomputed."""
    return status.model_copy(
        update={"alpha": alpha_column(status), "itl_ratio": itl_ratio_column(status)}
    )
