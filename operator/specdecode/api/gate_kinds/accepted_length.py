"""The AcceptedLength gate's wire declaration: its field, default and evidence rows."""

from __future__ import annotations

from specdecode.api.base import KubeModel
from specdecode.api.gate_kinds.declaration import REQUESTS, Evidence, GateKind, declare
from specdecode.vocabulary import GateType, TrafficSourceType

_MIN_SAMPLES = 30
_MINIMUM = f"minSamples finished requests (default {_MIN_SAMPLES})"
KIND = declare(
    GateKind(
        GateType.ACCEPTED_LENGTH,
        {"min_accepted_length": 1.3},
        _MIN_SAMPLES,
        REQUESTS,
        {
            TrafficSourceType.PROMPTS: Evidence(
                "the same counters and per-request accepted lengths", _MINIMUM
            ),
            TrafficSourceType.MIRROR: Evidence(
                "the same counters, bounded as for Acceptance under Mirror", _MINIMUM
            ),
        },
    )
)


class AcceptedLengthFields(KubeModel):
    """The AcceptedLength gate's field on `GateSpec`."""

    min_accepted_length: float | None = KIND.field(
        "min_accepted_length",
        "least mean tokens per decode step, 1 + accepted / drafts (what a variable-length "
        "proposal buys per step). At least 1.05: every step yields one token, so at 1 the gate "
        "cannot fail and just above it fails only a drafter accepting under one token in "
        "twenty steps.",
        ge=1.05,
        le=64,
    )
