"""`spec.guard`: after promotion, production's acceptance and tail keep being judged (drift).

Why: alpha depends on the traffic mix, so a config that passed last month can cost latency
this month and nobody would be told. On by default (a few Prometheus queries per look,
nothing written while nothing drifts); the default reaction only alerts.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from specdecode.api.base import KubeModel, RuledModel, optional
from specdecode.api.rules import Binary, Rule, RuleSet, at

# Re-exported: the wire spells it as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import DriftAction as DriftAction  # noqa: PLC0414
from specdecode.vocabulary import DriftKind as DriftKind  # noqa: PLC0414

# Written once (`rules`): GuardSpec enforces them and the CRD carries them as CEL.
GUARD_RULES = RuleSet(
    (
        Rule(
            Binary("<=", at("intervalSeconds"), at("windowSeconds")),
            "guard: windowSeconds must be at least intervalSeconds (a window holds a look)",
            ".windowSeconds",
        ),
    )
)


class GuardSpec(RuledModel):
    """How production's acceptance is judged after promotion."""

    cross_field_rules = (GUARD_RULES,)

    enabled: bool = Field(
        default=True,
        description="Judge production's acceptance after promotion (reads Prometheus only; "
        "writes nothing while nothing drifts).",
    )
    interval_seconds: int = Field(
        default=300, ge=5, le=86400, description="How often production's counters are judged."
    )
    window_seconds: int = Field(
        default=900,
        ge=30,
        le=604800,
        description="Length of one judged window: the looks within a window share its error "
        "budget (a sequential boundary), and a new window starts when it ends. Drift is "
        "found within about two windows of a change.",
    )
    latency: bool = Field(
        default=True,
        description="Also judge production's server-side tail: its step-ITL histogram "
        "(vllm:inter_token_latency_seconds) against the promoted config's own figure that "
        "the analysis' last TailLatency gate recorded (serverCandidateValue), at that "
        "gate's quantile and confidence. Nothing is judged when no stage recorded one.",
    )
    latency_tolerance: float = Field(
        default=0.4,
        gt=0,
        le=10,
        description="Latency drift when production's step-ITL quantile is surely above "
        "the candidate's figure at the analysis x (1 + latencyTolerance), moved up to the "
        "next histogram bucket edge. Default 0.4, the TailLatency gate's default "
        "tolerance: the slack the analysis gave the candidate against the baseline.",
    )
    on_drift: DriftAction = Field(
        default=DriftAction.ALERT,
        description="Alert: a Drifted condition, a Warning Event and a metric. Rollback: "
        "also return production to the config that was stable before the promotion. "
        "Reanalyze: production falls back to plain decoding and the promoted config is "
        "analysed again against it, with the rollout's stages (re-promoted if it passes).",
    )


class DriftStatus(KubeModel):
    """`status.drift`: the look that found production's acceptance below its threshold,
    or its server-side tail past its line (`kind`).

    Written once when a drift is found (and cleared when a new analysis starts or a later
    window shows production surely back on the right side); a look that finds nothing
    new writes nothing, so no per-look timestamps live here.
    """

    kind: DriftKind = Field(
        default=DriftKind.ACCEPTANCE, description="Acceptance or Latency: what drifted."
    )
    detected_at: datetime = Field(description="When the drift was found.")
    alpha: float | None = optional("Acceptance: production's alpha over the judged window.")
    lower_bound: float = Field(
        description="Lower confidence bound of that alpha (Latency: of the tail share)."
    )
    upper_bound: float = Field(
        description="Upper confidence bound (Acceptance: below the threshold)."
    )
    threshold: float = Field(
        description="Acceptance: the gate's minAlpha. Latency: the share of observations "
        "allowed above the edge (1 - the gate's quantile), which the lower bound exceeds."
    )
    window_start: datetime = Field(description="Start of the judged window.")
    window_seconds: float = Field(description="Seconds of counters the look judged.")
    blocks: int = Field(description="Time blocks (the independent units) the bound rests on.")
    draft_tokens: int | None = optional("Acceptance: production's draft tokens in the window.")
    tail_share: float | None = optional(
        "Latency: production's share of step-ITL observations above the edge."
    )
    edge_seconds: float | None = optional(
        "Latency: the histogram bucket edge judged (the first at or above the "
        "candidate's figure x (1 + latencyTolerance))."
    )
    reference_seconds: float | None = optional(
        "Latency: the candidate's server-side step-ITL quantile at the deciding "
        "stage (the promoted config's own figure before promotion)."
    )
    observations: int | None = optional(
        "Latency: production's step-ITL observations in the window."
    )
    message: str = Field(default="", description="The finding, for people.")
