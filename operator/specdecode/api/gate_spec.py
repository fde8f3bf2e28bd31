"""`spec.analysis.stages[].gates[]`: what a gate measures, its threshold, how sure it must be.

Each gate type's wire facts are its declaration in `api.gate_kinds` (fields, defaults,
minimum data, evidence rows), its fields listed among `GateSpec`'s bases; `GATE_KINDS`,
`GATE_RULES` and `GateSpec.setting` derive from them. Type-specific fields stay unset in
the schema. How a gate judges is its `domain.gates` module's; whether it judges and
certifies a stage is `certify`'s. More: docs/internals.md.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator
from pydantic.alias_generators import to_camel

from specdecode.api.base import KubeModel, optional
from specdecode.api.gate_kinds import (
    MODULES,
    acceptance,
    accepted_length,
    error_rate,
    speedup,
    tail_latency,
)
from specdecode.api.gate_kinds.declaration import (
    BLOCKS,
    REQUESTS,
    GateKind,
    declared,
    require_listed,
)
from specdecode.api.rules import Binary, Has, Not, Rule, RuleSet, all_of, at, implies, lit
from specdecode.api.speculative import NO_SPECULATION, SpeculativeMethod

# Re-exported: the wire spells these as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import GateType as GateType  # noqa: PLC0414
from specdecode.vocabulary import ItlDefinition as ItlDefinition  # noqa: PLC0414
from specdecode.vocabulary import SpeedupMetric as SpeedupMetric  # noqa: PLC0414

# What `methods` names plain decoding by (speculative unset): its fingerprint's name.
PlainDecoding = Literal["none"]
assert NO_SPECULATION == "none"

# Gate and stage names appear in status, Events and metric labels: a DNS-1123 label.
LabelName = Annotated[
    str, StringConstraints(min_length=1, max_length=63, pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]


# Every gate type's declaration (`api.gate_kinds`, registered as the package imports one
# module per GateType member), in GateType's order; the derived views: the defaults by
# field, the minimum by type.
GATE_KINDS: dict[GateType, GateKind] = declared()
GATE_DEFAULTS: dict[str, object] = {
    field: default for kind in GATE_KINDS.values() for field, default in kind.settings.items()
}
MIN_SAMPLES_DEFAULTS: dict[GateType, int] = {t: kind.min_samples for t, kind in GATE_KINDS.items()}


def _min_samples_description() -> str:
    """The minSamples description, quoting MIN_SAMPLES_DEFAULTS rather than retyping it."""
    d = MIN_SAMPLES_DEFAULTS
    requests = [t for t, kind in GATE_KINDS.items() if kind.unit == REQUESTS]
    blocks = [t for t, kind in GATE_KINDS.items() if kind.unit == BLOCKS]
    return (
        f"Independent units needed before a verdict: finished requests "
        f"({', '.join(t.value for t in requests)}; default "
        f"{', '.join(str(d[t]) for t in requests)}), time blocks of "
        f"loadGenerator.blockSeconds per side ({', '.join(t.value for t in blocks)}; default "
        f"{', '.join(str(d[t]) for t in blocks)}), or engine steps (ServerStep)."
    )


class _GateHead(KubeModel):
    """The fields every gate has, first on the wire."""

    name: LabelName = Field(description="Gate name, unique within its stage.")
    type: GateType = Field(
        description="Acceptance (alpha, for fixed-k model drafts: eagle, eagle3, mtp, "
        "draft_model), AcceptedLength (tokens per step, for ngram and suffix), TailLatency, "
        "Speedup or ErrorRate."
    )
    methods: list[SpeculativeMethod | PlainDecoding] | None = optional(
        "Judge this gate only when speculative.method is one of these, or, for "
        "none, when speculative is unset (plain decoding); else it is reported as not "
        "applicable and not enforced. Empty: every method and plain decoding.",
        max_length=8,
    )


class _MinSamples(KubeModel):
    """minSamples, which every type may set, in its place among the types' fields."""

    min_samples: int | None = optional(_min_samples_description(), ge=1)


# Each gate type's fields, from its declaration: written out, as mypy rejects computed
# bases, and `require_listed` fails on a type left out. Pydantic orders the fields from the
# last base to the first, so a new type's fields go first here (last on the wire, before
# confidence); minSamples keeps its place between TailLatency's and Speedup's.
class GateSpec(
    error_rate.ErrorRateFields,
    speedup.SpeedupFields,
    _MinSamples,
    tail_latency.TailLatencyFields,
    accepted_length.AcceptedLengthFields,
    acceptance.AcceptanceFields,
    _GateHead,
):
    """One gate: a measured quantity, a threshold, and how sure we must be."""

    confidence: float = Field(
        default=0.95,
        ge=0.8,
        lt=1,
        description="Confidence of the bound a verdict rests on. At least 0.8: below it one "
        "verdict in five or more may be wrong, a pass that is no evidence.",
    )
    dry_run: bool = Field(
        default=False, description="Measure and report, but never fail the stage."
    )
    fail_only: bool = Field(
        default=False,
        description="May fail the stage, but the stage never waits for it to pass: a gross "
        "early check (the default acceptance stage's ErrorRate) whose question a later "
        "stage's gate answers strictly. It is no evidence for a pass, so a stage of only "
        "failOnly or dryRun gates is refused.",
    )

    @model_validator(mode="after")
    def _fields_fit_type(self) -> GateSpec:
        GATE_RULES.enforce(self.to_wire())
        return self

    def setting(self, field: str) -> object:
        """A type-specific field as set, else its default from GATE_DEFAULTS."""
        value = getattr(self, field)
        return GATE_DEFAULTS[field] if value is None else value

    def number(self, field: str) -> float:
        """A numeric type-specific field as set, else its default."""
        value = self.setting(field)
        assert isinstance(value, int | float)
        return float(value)


require_listed(GateSpec, MODULES)

# The type-specific fields each gate type may set; GATE_RULES are generated from this table.
GATE_FIELDS: dict[GateType, frozenset[str]] = {
    gate_type: frozenset({*kind.settings, "min_samples"}) for gate_type, kind in GATE_KINDS.items()
}


def _field_fits_type(field: str) -> Rule:
    types = sorted(gate_type.value for gate_type in GateType if field in GATE_FIELDS[gate_type])
    wire = to_camel(field)
    return Rule(
        implies(Has(at(wire)), Binary("in", at("type"), lit(types))),
        f"gate {wire} applies only to type {' or '.join(types)}",
        f".{wire}",
        "FieldValueForbidden",
    )


# One rule per type-specific field: it may be set only on the types that use it (written
# once, `rules`: GateSpec enforces them and the CRD carries them as CEL).
# A field every type may set (minSamples) needs no rule.
_SOME_TYPES_ONLY = frozenset().union(*GATE_FIELDS.values()) - frozenset.intersection(
    *GATE_FIELDS.values()
)
# The flags that make a gate no evidence for a pass (wire names); a gate sets at most one.
NO_PASS_FLAGS = ("dryRun", "failOnly")
_NOT_BOTH_DRY_RUN_AND_FAIL_ONLY = Rule(
    Not(all_of(*(all_of(Has(at(f)), Binary("==", at(f), lit(True))) for f in NO_PASS_FLAGS))),
    "gate: set at most one of dryRun (never fails the stage) and failOnly (can only fail it)",
    ".failOnly",
)
GATE_RULES = RuleSet(
    (
        *(_field_fits_type(field) for field in sorted(_SOME_TYPES_ONLY)),
        _NOT_BOTH_DRY_RUN_AND_FAIL_ONLY,
    )
)
