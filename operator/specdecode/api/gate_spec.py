"""`spec.analysis.stages[].gates[]`: what a gate measures, its threshold, how sure it must be.

Which fields each gate type may set (`GATE_FIELDS`) and which gates Mirror traffic can judge
(`mirror_can_judge`) live here too, since the CRD's CEL rules are generated from them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, StringConstraints, model_validator

from specdecode.api.base import KubeModel

# Gate and stage names appear in status, Events and metric labels: a DNS-1123 label.
LabelName = Annotated[
    str, StringConstraints(min_length=1, max_length=63, pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]


class GateType(StrEnum):
    """What a gate measures."""

    ACCEPTANCE = "Acceptance"
    TAIL_LATENCY = "TailLatency"
    SPEEDUP = "Speedup"
    ERROR_RATE = "ErrorRate"


class ItlDefinition(StrEnum):
    """Which inter-token latency a latency gate compares.

    PerToken spreads each streamed chunk's gap over the tokens it carried (what a user
    perceives as token pace); PerChunk is the raw gap between chunks (one per engine step).
    Both are timed by the operator's shadow client. ServerStep reads vLLM's own
    `inter_token_latency_seconds` histogram (one sample per request per engine step, coarse
    buckets): the only ITL there is when responses go elsewhere (Mirror traffic).
    """

    PER_TOKEN = "PerToken"
    PER_CHUNK = "PerChunk"
    SERVER_STEP = "ServerStep"


class SpeedupMetric(StrEnum):
    """What a speedup gate compares between candidate and baseline."""

    TIME_PER_OUTPUT_TOKEN = "TimePerOutputToken"
    THROUGHPUT = "Throughput"


class GateSpec(KubeModel):
    """One gate: a measured quantity, a threshold, and how sure we must be."""

    name: LabelName = Field(description="Gate name, unique within its stage.")
    type: GateType = Field(description="Acceptance, TailLatency, Speedup or ErrorRate.")
    min_alpha: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Acceptance: least draft acceptance rate (accepted / draft tokens). "
        "Default 0.55.",
    )
    min_draft_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Acceptance: draft tokens needed before a verdict (else Inconclusive).",
    )
    quantile: float | None = Field(
        default=None, gt=0.5, lt=1, description="TailLatency: quantile compared. Default 0.99."
    )
    tolerance: float | None = Field(
        default=None,
        ge=0,
        le=10,
        description="TailLatency: candidate may be this fraction slower than baseline. "
        "Default 0.10.",
    )
    itl_definition: ItlDefinition | None = Field(
        default=None,
        description="TailLatency: PerToken (the default with Prompts traffic), PerChunk, or "
        "ServerStep (vLLM's step histogram; the default and only choice with Mirror traffic).",
    )
    min_samples: int | None = Field(
        default=None, ge=1, description="Samples per side needed before a verdict."
    )
    speedup_metric: SpeedupMetric | None = Field(
        default=None, description="Speedup: TimePerOutputToken (default) or Throughput."
    )
    min_speedup: float | None = Field(
        default=None, gt=0, description="Speedup: least baseline/candidate ratio. Default 1.0."
    )
    max_error_rate: float | None = Field(
        default=None, ge=0, le=1, description="ErrorRate: most failed shadow requests allowed."
    )
    confidence: float = Field(
        default=0.95, gt=0.5, lt=1, description="Confidence of the bound a verdict rests on."
    )
    dry_run: bool = Field(
        default=False, description="Measure and report, but never fail the stage."
    )

    @model_validator(mode="after")
    def _fields_fit_type(self) -> GateSpec:
        allowed = GATE_FIELDS[self.type]
        every_specific = set().union(*GATE_FIELDS.values())
        misplaced = sorted(f for f in every_specific - allowed if getattr(self, f) is not None)
        if misplaced:
            fields = ", ".join(misplaced)
            raise ValueError(f"gate {self.name}: {fields} do not apply to type {self.type}")
        return self


# The type-specific fields each gate type may set; the CRD's CEL rules mirror this table.
GATE_FIELDS: dict[GateType, frozenset[str]] = {
    GateType.ACCEPTANCE: frozenset({"min_alpha", "min_draft_tokens"}),
    GateType.TAIL_LATENCY: frozenset({"quantile", "tolerance", "itl_definition", "min_samples"}),
    GateType.SPEEDUP: frozenset({"speedup_metric", "min_speedup", "min_samples"}),
    GateType.ERROR_RATE: frozenset({"max_error_rate", "min_samples"}),
}


MIRROR_GATES_MESSAGE = (
    "traffic source Mirror: mirrored responses never reach the operator, so only "
    "Acceptance gates and TailLatency gates with itlDefinition ServerStep can be judged"
)


def mirror_can_judge(gate: GateSpec) -> bool:
    """Whether a gate can be measured without seeing responses (Mirror traffic)."""
    if gate.type is GateType.ACCEPTANCE:
        return True
    return gate.type is GateType.TAIL_LATENCY and gate.itl_definition in (
        None,
        ItlDefinition.SERVER_STEP,
    )
