"""The ErrorRate gate's wire declaration: its field, default and evidence rows.

The candidate's failed share minus the baseline's, at the bound: proving <= 0.01 takes
~600-900 clean requests per side at a look's error, 0.02 takes ~300-450.
"""

from __future__ import annotations

from specdecode.api.base import KubeModel
from specdecode.api.gate_kinds.declaration import REQUESTS, Evidence, GateKind, declare
from specdecode.vocabulary import GateType, TrafficSourceType

_MIN_SAMPLES = 20
KIND = declare(
    GateKind(
        GateType.ERROR_RATE,
        {"max_error_rate": 0.02},
        _MIN_SAMPLES,
        REQUESTS,
        {
            TrafficSourceType.PROMPTS: Evidence(
                "the load pods' request outcomes; a request in flight past "
                "requestTimeoutSeconds counts as failed",
                f"minSamples requests per side (default {_MIN_SAMPLES})",
            ),
            TrafficSourceType.MIRROR: Evidence(
                "vllm:request_success_total{finished_reason} and the running-requests gauges; "
                "requests the counters leave unaccounted never help a pass",
                f"minSamples mirrored requests per side (default {_MIN_SAMPLES})",
            ),
        },
    )
)


class ErrorRateFields(KubeModel):
    """The ErrorRate gate's field on `GateSpec`."""

    max_error_rate: float | None = KIND.field(
        "max_error_rate",
        "most extra failed share of shadow requests allowed, candidate minus baseline on the "
        "same requests. At most 0.2: a candidate failing one more request in five is broken, "
        "and a wider bound could fail only such a candidate (at 1 it cannot fail at all).",
        ge=0,
        le=0.2,
    )
