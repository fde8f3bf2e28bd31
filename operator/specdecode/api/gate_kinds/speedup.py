"""The Speedup gate's wire declaration: its fields, defaults and evidence rows."""

from __future__ import annotations

from specdecode.api.base import KubeModel
from specdecode.api.gate_kinds.declaration import (
    BLOCKS,
    BLOCKS_PER_SIDE,
    Evidence,
    GateKind,
    declare,
)
from specdecode.vocabulary import GateType, SpeedupMetric, TrafficSourceType

_MIN_SAMPLES = 20
KIND = declare(
    GateKind(
        GateType.SPEEDUP,
        {"speedup_metric": SpeedupMetric.TIME_PER_OUTPUT_TOKEN, "min_speedup": 1.0},
        _MIN_SAMPLES,
        BLOCKS,
        {
            TrafficSourceType.PROMPTS: Evidence(
                "the load pods' time per output token per time block",
                f"minSamples {BLOCKS_PER_SIDE} (default {_MIN_SAMPLES})",
            ),
            TrafficSourceType.MIRROR: Evidence(
                "nothing", "-", judged=False, not_judged="Mirror traffic has no client timings"
            ),
        },
    )
)


class SpeedupFields(KubeModel):
    """The Speedup gate's fields on `GateSpec`."""

    speedup_metric: SpeedupMetric | None = KIND.field(
        "speedup_metric", "TimePerOutputToken or Throughput."
    )
    min_speedup: float | None = KIND.field(
        "min_speedup",
        "least baseline/candidate median time per output token. At least 0.5: a lower floor "
        "passes a candidate at under half the baseline's speed, so the gate could fail only a "
        "broken engine.",
        ge=0.5,
    )
