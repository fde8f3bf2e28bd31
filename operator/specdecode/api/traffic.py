"""`spec.analysis.traffic`: where shadow requests come from and what they may cost.

Identical requests go to baseline and candidate; a cost cap bounds the GPU time spent on
requests nobody reads.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator
from pydantic.alias_generators import to_camel

from specdecode.api.base import KubeModel


class ConfigMapKeyRef(KubeModel):
    """A key in a ConfigMap or Secret of the rollout's namespace."""

    name: str = Field(min_length=1, max_length=253, description="Object name.")
    key: str = Field(min_length=1, description="Key holding JSONL prompts.")


class TrafficSourceType(StrEnum):
    """Where shadow requests come from."""

    PROMPTS = "Prompts"
    MIRROR = "Mirror"


class TrafficSpec(KubeModel):
    """Shadow traffic: identical requests to baseline and candidate."""

    source: TrafficSourceType = Field(
        default=TrafficSourceType.PROMPTS,
        description="Prompts (the operator replays a prompt set) or Mirror (Gateway API "
        "RequestMirror of live traffic).",
    )
    config_map_ref: ConfigMapKeyRef | None = Field(
        default=None, description="JSONL prompts in a ConfigMap (Prompts source)."
    )
    secret_ref: ConfigMapKeyRef | None = Field(
        default=None, description="JSONL prompts in a Secret (Prompts source)."
    )
    builtin_workload: str = Field(
        default="chat",
        pattern="^(chat|code|rag|translation|math)$",
        description="Built-in synthetic prompt set when no prompts are referenced.",
    )
    max_tokens: int = Field(default=256, ge=1, le=32768, description="Default max_tokens.")
    seed: int = Field(default=0, ge=0, description="Seed for prompt sampling.")
    request_timeout_seconds: float = Field(default=120, gt=0, description="Per request.")
    max_requests_per_stage: int | None = Field(
        default=None,
        ge=1,
        description="Shadow cost cap (Prompts source): requests per stage and engine.",
    )
    max_output_tokens_per_stage: int | None = Field(
        default=None,
        ge=1,
        description="Shadow cost cap (Prompts source): generated tokens per stage and engine "
        "(seconds are capped by each stage's maxDurationSeconds).",
    )
    http_route: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description="Mirror source: the HTTPRoute (same namespace) whose rules send live "
        "traffic to the production Service. While a stage runs the operator adds "
        "RequestMirror filters toward the baseline and candidate Services to those rules, "
        "and removes them when the analysis ends; nothing else in the route is touched.",
    )
    mirror_percent: int = Field(
        default=10,
        ge=1,
        le=100,
        description="Mirror source: percent of the route's live requests copied to each "
        "shadow engine.",
    )

    @model_validator(mode="after")
    def _source_fields(self) -> TrafficSpec:
        if self.config_map_ref is not None and self.secret_ref is not None:
            raise ValueError("traffic: set at most one of configMapRef and secretRef")
        if self.source is TrafficSourceType.MIRROR and not self.http_route:
            raise ValueError("traffic: source Mirror needs httpRoute")
        if self.source is TrafficSourceType.PROMPTS and self.http_route:
            raise ValueError("traffic: httpRoute applies only to source Mirror")
        if self.source is TrafficSourceType.MIRROR:
            set_fields = [to_camel(f) for f in PROMPTS_ONLY_FIELDS if getattr(self, f) is not None]
            if set_fields:
                raise ValueError(
                    f"traffic: {', '.join(set_fields)} apply only to source Prompts "
                    "(Mirror traffic is live; mirrorPercent bounds its cost)"
                )
        return self


# Prompts-source fields without a default: setting one with Mirror traffic is a mistake.
PROMPTS_ONLY_FIELDS = (
    "config_map_ref",
    "secret_ref",
    "max_requests_per_stage",
    "max_output_tokens_per_stage",
)
