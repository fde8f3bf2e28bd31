"""Where the wire's gates meet the domain: `GateSpec` in; `GateParams`, the kernel's answer out.

Why one module: the gates, the statistics and the stage's rules import nothing from `api`
(an import-linter contract), so a second API version changes these conversions, not the
measures. The kernel (`api.certify`) stays the one place that decides whether a gate is
judged and certifies; it is evaluated here and handed over as the domain's
`Certification`. GateParams are built by field name from GateParams' own table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any

from specdecode.api.certify import StageContext, certify, evidence_row
from specdecode.api.gate_spec import GATE_KINDS, MIN_SAMPLES_DEFAULTS, GateSpec
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.domain.certification import Certification
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import stage_needs
from specdecode.domain.gates.registry import Need
from specdecode.domain.speculative_setting import SpeculativeSetting

# GateParams fields GateSpec does not have as such: computed from it by `_derived`.
_DERIVED = frozenset({"methods", "default_min_samples", "settings"})


def gate_params(gate: GateSpec) -> GateParams:
    """The gate's parameters, by GateParams' field names, defaults applied."""
    return GateParams(
        **{
            field.name: getattr(gate, field.name)
            for field in fields(GateParams)
            if field.name not in _DERIVED
        },
        **_derived(gate),
    )


def _setting(gate: GateSpec, name: str, default: object) -> object:
    """A type-specific field as set, else its default; a float where the default is one."""
    return gate.number(name) if isinstance(default, float) else gate.setting(name)


def _derived(gate: GateSpec) -> dict[str, Any]:
    own = GATE_KINDS[gate.type].settings
    return {
        "methods": tuple(str(method) for method in gate.methods or ()),
        "default_min_samples": MIN_SAMPLES_DEFAULTS[gate.type],
        "settings": tuple((name, _setting(gate, name, d)) for name, d in own.items()),
    }


def stage_context(
    spec: SpecDecodeRolloutSpec, index: int, candidate: SpeculativeSetting | None = None
) -> StageContext:
    """Stage `index` as the kernel (`api.certify`) reads it; `candidate`: the config under
    analysis, whose per-batch-size schedule may leave a Speedup gate unjudged."""
    schedule = None if candidate is None else candidate.schedule
    return StageContext(
        source=evidence_row(spec.analysis.traffic),
        method=spec.speculative.method if spec.speculative is not None else None,
        concurrency=spec.analysis.stages[index].concurrency,
        schedule=schedule,
    )


def kernel_of(
    spec: SpecDecodeRolloutSpec, index: int, candidate: SpeculativeSetting | None = None
) -> tuple[Certification, ...]:
    """The kernel's answer for each gate of stage `index`, in spec order, as the domain's."""
    context = stage_context(spec, index, candidate)
    gates: Sequence[GateSpec] = spec.analysis.stages[index].gates
    return tuple(Certification(**asdict(certify(gate, context))) for gate in gates)


def observations_needed(spec: SpecDecodeRolloutSpec, index: int) -> frozenset[Need]:
    """What the reconciler fetches for stage `index`: what its measured gates declare."""
    gates = spec.analysis.stages[index].gates
    kernel = kernel_of(spec, index)
    return stage_needs(
        gate_params(gate) for gate, answer in zip(gates, kernel, strict=True) if answer.judged
    )
