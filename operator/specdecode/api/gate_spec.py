"""`spec.analysis.stages[].gates[]`: what a gate measures, its threshold, how sure it must be.

Each gate type's wire facts are one row of `GATE_KINDS` (its fields, defaults, minimum
data); the field descriptions, `GATE_RULES` and `GateSpec.setting` derive from it.
Type-specific fields stay unset in the schema, and every threshold is bounded to where the
gate can still fail. How a gate judges is its `domain.gates` module's; whether it judges
and certifies a stage is `certify`'s. More: docs/internals.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator
from pydantic.alias_generators import to_camel

from specdecode.api.base import KubeModel, optional
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


@dataclass(frozen=True)
class GateKind:
    """What the wire knows of one gate type, written once: the type-specific settings it may
    carry with their defaults, and the units its minSamples counts with their default.

    Why one row per type: which fields a type may set (`GATE_RULES`, hence the CRD's CEL),
    their defaults (quoted by the field descriptions, applied by `GateSpec.setting`) and the
    minimum data all derive from it; the gate's statistic lives in its domain module
    (`domain.gates`), which the API cannot import.
    """

    settings: dict[str, object]  # field -> default
    min_samples: int  # what a verdict needs before it may be trusted
    unit: str  # what minSamples counts: REQUESTS or BLOCKS


REQUESTS, BLOCKS = "requests", "blocks"

# The type-specific fields and their defaults: the one place they are defined.
# Thresholds from the calibration study the simulator reproduces (8B on L40S, chat and code,
# concurrency 10): fixed-k heads at alpha >= 0.37 gained >= 40 %, at alpha <= 0.19 at most
# 8 %, so 0.2 is where a head stops paying (the 0.55 in circulation rolls back EAGLE-3 on
# chat, a 1.40x win at alpha 0.38).
# Tail: the seed recipe is "at production concurrency, confirm P99 ITL did not get worse",
# and the stall a reader sees is the chunk gap (PerChunk). Tolerance 0.4, from the simulator
# (`benchmarks/tail_ratios.py`, P99 chunk-gap ratios): the study's wins (mean chunk gap
# 1.06x n-gram, 1.12x suffix, 1.25x EAGLE-3 k=2 at concurrency 10) measured 1.04-1.21x
# at 10 streams on the built-in prompts and up to 1.36x on the study's long ones, so they
# pass; a P99 stall 1.5x the baseline's fails. At 32 streams on GB10 EAGLE-3 k=2 on chat
# measured 1.27x (passes) and k=3 1.40x: at the line, undecided. Not PerToken: on the
# study's prompts it stayed at 0.89-1.05x while the P99 chunk gap grew 1.1-1.6x.
GATE_KINDS: dict[GateType, GateKind] = {
    GateType.ACCEPTANCE: GateKind(
        {"min_alpha": 0.2, "min_draft_tokens": 1000},
        30,
        REQUESTS,  # clusters of the bound
    ),
    GateType.ACCEPTED_LENGTH: GateKind({"min_accepted_length": 1.3}, 30, REQUESTS),
    GateType.TAIL_LATENCY: GateKind(
        {"quantile": 0.99, "tolerance": 0.4, "itl_definition": ItlDefinition.PER_CHUNK},
        20,  # time blocks per side (loadGenerator.blockSeconds each)
        BLOCKS,
    ),
    GateType.SPEEDUP: GateKind(
        {"speedup_metric": SpeedupMetric.TIME_PER_OUTPUT_TOKEN, "min_speedup": 1.0}, 20, BLOCKS
    ),
    # The candidate's failed share minus the baseline's, at the bound: proving <= 0.01 takes
    # ~600-900 clean requests per side at a look's error, 0.02 takes ~300-450.
    GateType.ERROR_RATE: GateKind({"max_error_rate": 0.02}, 20, REQUESTS),
}
# Derived views: the defaults by field, and the minimum by type.
GATE_DEFAULTS: dict[str, object] = {
    field: default for kind in GATE_KINDS.values() for field, default in kind.settings.items()
}
MIN_SAMPLES_DEFAULTS: dict[GateType, int] = {t: kind.min_samples for t, kind in GATE_KINDS.items()}


def _default(field: str) -> str:
    value = GATE_DEFAULTS[field]
    return f" Default {value.value if isinstance(value, StrEnum) else value}."


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


class GateSpec(KubeModel):
    """One gate: a measured quantity, a threshold, and how sure we must be."""

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
    min_alpha: float | None = optional(
        "Acceptance: least draft acceptance rate (accepted / draft tokens). "
        "At least 0.05: a random-weight head measured 0.001 and an identical draft sampled "
        "at temperature 0.7 0.083, so a lower floor passes drafts that guess nothing."
        + _default("min_alpha"),
        ge=0.05,
        lt=1,
    )
    min_draft_tokens: int | None = optional(
        "Acceptance: draft tokens needed before a verdict (else Inconclusive)."
        + _default("min_draft_tokens"),
        ge=1,
    )
    min_accepted_length: float | None = optional(
        "AcceptedLength: least mean tokens per decode step, 1 + accepted / "
        "drafts (what a variable-length proposal buys per step). At least 1.05: every step "
        "yields one token, so at 1 the gate cannot fail and just above it fails only a "
        "drafter accepting under one token in twenty steps." + _default("min_accepted_length"),
        ge=1.05,
        le=64,
    )
    quantile: float | None = optional(
        "TailLatency: quantile compared. At least 0.9: below it the gate "
        "compares the body of the distribution, where stalls on a few percent of steps never "
        "show." + _default("quantile"),
        ge=0.9,
        lt=1,
    )
    tolerance: float | None = optional(
        "TailLatency: candidate's quantile may exceed the baseline's by this "
        "fraction (0.4: at most 1.4x the baseline's P99 stall). At most 1, twice the "
        "baseline's stall: past that the gate fails only a stall no reader would accept."
        + _default("tolerance"),
        ge=0,
        le=1,
    )
    itl_definition: ItlDefinition | None = optional(
        "TailLatency: PerChunk (client time between a request's streamed chunks, "
        "one per engine step: the stall a reader sees), PerToken (each chunk gap divided by "
        "its tokens, weighted by tokens), or ServerStep (vLLM's per-step ITL histogram; the "
        "default and only choice with ServerSide Mirror traffic)." + _default("itl_definition")
    )
    min_samples: int | None = optional(_min_samples_description(), ge=1)
    speedup_metric: SpeedupMetric | None = optional(
        "Speedup: TimePerOutputToken or Throughput." + _default("speedup_metric")
    )
    min_speedup: float | None = optional(
        "Speedup: least baseline/candidate median time per output token. At "
        "least 0.5: a lower floor passes a candidate at under half the baseline's speed, "
        "so the gate could fail only a broken engine." + _default("min_speedup"),
        ge=0.5,
    )
    max_error_rate: float | None = optional(
        "ErrorRate: most extra failed share of shadow requests allowed, candidate "
        "minus baseline on the same requests. At most 0.2: a candidate failing one more "
        "request in five is broken, and a wider bound could fail only such a candidate "
        "(at 1 it cannot fail at all)." + _default("max_error_rate"),
        ge=0,
        le=0.2,
    )
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

    @property
    def effective_min_samples(self) -> int:
        """min_samples as set, else the type's default."""
        return self.min_samples or MIN_SAMPLES_DEFAULTS[self.type]

    @property
    def effective_itl_definition(self) -> ItlDefinition:
        """itl_definition as set, else the default."""
        value = self.setting("itl_definition")
        assert isinstance(value, ItlDefinition)
        return value


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
