"""`spec.guard`: after promotion, production's acceptance keeps being judged (drift).

Why: alpha depends on the traffic (workload class, sampling temperature). A config that
passed its gates on last month's mix can cost latency on this month's (translation or
creative traffic collapses alpha), and nobody would be told. The guard reads production's
own spec-decode counters from Prometheus on a slow cadence and says so when production's
alpha is surely below the threshold the analysis judged the config against.

On by default: a look is a few Prometheus queries every `intervalSeconds` while Promoted
with a speculative config, nothing is written to the API server while nothing drifts (the
status only changes when a drift is found), and the default reaction only alerts.
`guard.enabled: false` turns it off; `onDrift: Rollback` also returns production to the
config that was stable before the promotion.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field, model_validator

from specdecode.api.base import KubeModel
from specdecode.api.rules import Binary, Rule, RuleSet, at


class DriftAction(StrEnum):
    """What the operator does when production's acceptance drifted below the threshold."""

    ALERT = "Alert"  # Drifted condition, a Warning Event, the specdecode_drifted gauge
    ROLLBACK = "Rollback"  # the same, and production returns to the previous stable config
    # The same alert; production falls back to plain decoding while the promoted config is
    # analysed again against it (re-promoted if it still passes, kept off if it does not).
    REANALYZE = "Reanalyze"


class GuardSpec(KubeModel):
    """How production's acceptance is judged after promotion."""

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
    on_drift: DriftAction = Field(
        default=DriftAction.ALERT,
        description="Alert: a Drifted condition, a Warning Event and a metric. Rollback: "
        "also return production to the config that was stable before the promotion. "
        "Reanalyze: production falls back to plain decoding and the promoted config is "
        "analysed again against it, with the rollout's stages (re-promoted if it passes).",
    )

    @model_validator(mode="after")
    def _window_holds_a_look(self) -> GuardSpec:
        GUARD_RULES.enforce(self.to_wire())
        return self


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


class DriftStatus(KubeModel):
    """`status.drift`: the look that found production's acceptance below its threshold.

    Written once when a drift is found (and cleared when a new analysis starts or a later
    window shows production surely above the threshold again); a look that finds nothing
    new writes nothing, so no per-look timestamps live here.
    """

    detected_at: datetime = Field(description="When the drift was found.")
    alpha: float = Field(description="Production's alpha over the judged window.")
    lower_bound: float = Field(description="Lower confidence bound of that alpha.")
    upper_bound: float = Field(description="Upper confidence bound (below the threshold).")
    threshold: float = Field(description="The Acceptance gate's minAlpha it was judged against.")
    window_start: datetime = Field(description="Start of the judged window.")
    window_seconds: float = Field(description="Seconds of counters the look judged.")
    blocks: int = Field(description="Time blocks (the independent units) the bound rests on.")
    draft_tokens: int = Field(description="Production's draft tokens in the window.")
    message: str = Field(default="", description="The finding, for people.")
