"""Where the rollout's spec meets the drift guard: the spec in, as a `GuardPlan`.

Why one module: the guard's rules (`domain.guarding`, `guard_findings`, `latency_drift`)
import nothing from `api`, so a second API version changes this conversion, not the rules.
Read once a reconcile (observe) onto the `Observations`. The rules read here (the gates'
defaults, the config's fingerprint) stay written in `api`; the status' side is read by
`domain.transitions.guard_state`, on the status as the decision has it.
"""

from __future__ import annotations

from specdecode.adapters.gate_boundary import gate_params
from specdecode.api.gate_spec import GateSpec
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.speculative import fingerprint_of
from specdecode.domain.gates import Headline, headline_type
from specdecode.domain.guard_model import GuardPlan

# The gates whose results are the alpha (Acceptance) and tail (TailLatency) headlines, with
# their defaults: what the guard judges against when no stage has one.
DEFAULT_GATE = gate_params(GateSpec(name="acceptance", type=headline_type(Headline.ALPHA)))
DEFAULT_TAIL_GATE = gate_params(GateSpec(name="p99-itl", type=headline_type(Headline.TAIL)))


def guard_plan_of(spec: SpecDecodeRolloutSpec) -> GuardPlan:
    """The spec as the drift guard reads it."""
    guard = spec.guard
    stages = tuple(
        (stage.name, tuple(gate_params(gate) for gate in stage.gates))
        for stage in spec.analysis.stages
    )
    return GuardPlan(
        guard.enabled,
        guard.interval_seconds,
        guard.window_seconds,
        guard.on_drift,
        guard.latency,
        guard.latency_tolerance,
        stages,
        DEFAULT_GATE,
        DEFAULT_TAIL_GATE,
        desired=fingerprint_of(spec.speculative),
    )
