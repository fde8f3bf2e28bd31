"""The Acceptance gate's wire declaration: its fields, defaults and evidence rows.

The threshold is from the calibration study the simulator reproduces (8B on L40S, chat and
code, concurrency 10): fixed-k heads at alpha >= 0.37 gained >= 40 %, at alpha <= 0.19 at
most 8 %, so 0.2 is where a head stops paying (the 0.55 in circulation rolls back EAGLE-3
on chat, a 1.40x win at alpha 0.38).
"""

from __future__ import annotations

from specdecode.api.base import KubeModel
from specdecode.api.gate_kinds.declaration import REQUESTS, Evidence, GateKind, declare
from specdecode.vocabulary import GateType, TrafficSourceType

_SETTINGS: dict[str, object] = {"min_alpha": 0.2, "min_draft_tokens": 1000}
_MIN_SAMPLES = 30  # clusters of the bound
_MINIMUM = (
    f"minDraftTokens draft tokens (default {_SETTINGS['min_draft_tokens']}) and "
    f"minSamples finished requests (default {_MIN_SAMPLES})"
)
KIND = declare(
    GateKind(
        GateType.ACCEPTANCE,
        _SETTINGS,
        _MIN_SAMPLES,
        REQUESTS,
        {
            TrafficSourceType.PROMPTS: Evidence(
                "the candidate's vllm:spec_decode_num_draft_tokens / num_accepted_tokens "
                "counters, and the load pods' per-request accepted lengths",
                _MINIMUM,
            ),
            TrafficSourceType.MIRROR: Evidence(
                "the same counters, each request all-or-nothing, drafts per request bounded "
                "by vllm:request_generation_tokens",
                _MINIMUM,
            ),
        },
    )
)


class AcceptanceFields(KubeModel):
    """The Acceptance gate's fields on `GateSpec`."""

    min_alpha: float | None = KIND.field(
        "min_alpha",
        "least draft acceptance rate (accepted / draft tokens). At least 0.05: a random-weight "
        "head measured 0.001 and an identical draft sampled at temperature 0.7 0.083, so a "
        "lower floor passes drafts that guess nothing.",
        ge=0.05,
        lt=1,
    )
    min_draft_tokens: int | None = KIND.field(
        "min_draft_tokens", "draft tokens needed before a verdict (else Inconclusive).", ge=1
    )
