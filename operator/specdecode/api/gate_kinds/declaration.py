"""What one gate type's wire declaration holds (`GateKind`, `Evidence`), and the registry
the declarations fill (`declare`) and `api.gate_spec` reads (`declared`).

Why a registry: a declaration module registers its row as `api.gate_kinds` imports it (one
per `GateType` member), so the row and the fields cannot be listed in two places; `declared`
fails on a gate type without a declaration or with a traffic source it leaves out, and
`require_listed` on a type whose fields `GateSpec`'s (static, for mypy) bases leave out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from types import ModuleType
from typing import Any, TypeVar

from specdecode.api.base import optional
from specdecode.vocabulary import GateType, ItlDefinition, TrafficSourceType

Model = TypeVar("Model")  # what `require_listed` checks and returns: GateSpec
REQUESTS, BLOCKS = "requests", "blocks"
# What a latency gate's minSamples counts under Prompts traffic.
BLOCKS_PER_SIDE = "time blocks of loadGenerator.blockSeconds per side"


@dataclass(frozen=True)
class Evidence:
    """One gate type under one traffic source.

    `itl`: the only ITL definition the source admits (unset is admitted: under Mirror it
    means ServerStep); None admits every one. `judged` False: admitted (the default stages
    carry the gate, and a CRD default cannot depend on the source) but reported as not
    judged, with `not_judged` as the reason, and never enforced.
    """

    reads: str
    minimum: str
    judged: bool = True
    not_judged: str = ""
    itl: tuple[ItlDefinition] | None = None
    admitted: bool = True


@dataclass(frozen=True)
class GateKind:
    """What the wire knows of one gate type, written once: the type-specific settings it may
    carry with their defaults, the units its minSamples counts with their default, and what
    each traffic source reads of it (the evidence table's rows, read by `api.certify`).

    Why one row per type: which fields a type may set (`GATE_RULES`, hence the CRD's CEL),
    their defaults (quoted by the field descriptions, applied by `GateSpec.setting`) and the
    minimum data all derive from it; the gate's statistic lives in its domain module
    (`domain.gates`), which the API cannot import.
    """

    type: GateType
    settings: dict[str, object]  # field -> default
    min_samples: int  # what a verdict needs before it may be trusted
    unit: str  # what minSamples counts: REQUESTS or BLOCKS
    evidence: dict[TrafficSourceType, Evidence]

    def default(self, field: str) -> str:
        """The sentence a field's description ends with: its default, as the wire spells it."""
        value = self.settings[field]
        return f" Default {value.value if isinstance(value, StrEnum) else value}."

    def field(self, name: str, text: str, **bounds: Any) -> Any:
        """One of its `GateSpec` fields (`optional`): described as `<Type>: <text>` and its
        default (`default`), with its bounds if any."""
        return optional(f"{self.type.value}: {text}{self.default(name)}", **bounds)


_DECLARED: dict[GateType, GateKind] = {}


def declare(kind: GateKind) -> GateKind:
    """Register a gate type's declaration (once per type); returns it for its module."""
    if kind.type in _DECLARED:
        raise ValueError(f"{kind.type.value} declared twice")
    _DECLARED[kind.type] = kind
    return kind


def declared() -> dict[GateType, GateKind]:
    """Every gate type's declaration, in `GateType`'s order; fails on one missing (its module
    calls no `declare`) or missing a traffic source's evidence row. That its fields are among
    `GateSpec`'s bases is `require_listed`'s check."""
    missing = [t.value for t in GateType if t not in _DECLARED]
    if missing:
        raise LookupError(f"gate types without a declaration in api/gate_kinds: {missing}")
    for kind in _DECLARED.values():
        if gaps := [s.value for s in TrafficSourceType if s not in kind.evidence]:
            raise LookupError(f"{kind.type.value}: no evidence row for {gaps}")
    return {t: _DECLARED[t] for t in GateType}


def require_listed(model: type[Model], modules: dict[GateType, ModuleType]) -> type[Model]:
    """`model` (`GateSpec`), once every gate type's `<Type>Fields` from its module is among
    its bases. mypy needs the bases written out (it rejects computed ones), so they are the
    one list a new gate type is added to by hand; this fails naming the class to add."""
    unlisted = []
    for gate_type, module in modules.items():
        name = f"{gate_type.value}Fields"
        fields = getattr(module, name, None)
        if not isinstance(fields, type):
            raise LookupError(f"{module.__name__} defines no {name} (its GateSpec fields)")
        if fields not in model.__mro__:
            unlisted.append(f"{module.__name__.rsplit('.', 1)[-1]}.{name}")
    if unlisted:
        raise TypeError(
            f"{model.__name__}'s bases leave out {', '.join(unlisted)}: list each first among "
            f"{model.__name__}'s bases in specdecode/api/gate_spec.py"
        )
    return model
