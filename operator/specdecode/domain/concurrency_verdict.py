"""What a rollback on latency says about concurrency: it paid lower down, it fails here.

Speculative decoding pays most at low load; as the batch grows the step turns compute-bound
and the drafts' extra work lengthens every step, so a config can pass its acceptance stage
at concurrency 4 and still stretch the P99 stall at production's 32. A bare "p99-itl
failed" then reads as "the config is bad", when it is "the config is bad at this load".
When a latency gate (TailLatency or Speedup) fails a stage, and an earlier stage at a lower
concurrency was Successful, the verdict names both concurrencies, so the user knows the config
failed at this load, not everywhere (on vLLM >= 0.24 a per-batch-size schedule can keep
speculation to the batch sizes where it holds).
"""

from __future__ import annotations

from collections.abc import Sequence

from specdecode.api.analysis import AnalysisSpec
from specdecode.api.gate_spec import GateType
from specdecode.api.status import GateResult, StagePhase, StageStatus

LATENCY_GATES = frozenset({GateType.TAIL_LATENCY, GateType.SPEEDUP})


def paid_lower_down(
    analysis: AnalysisSpec,
    stages: Sequence[StageStatus],
    index: int,
    failed: Sequence[GateResult],
) -> str:
    """'; it passed stage a at concurrency 4 but fails the tail at concurrency 32', or ''.

    Only for Prompts-traffic stages with a closed-loop concurrency (open-loop or Mirror
    stages have no concurrency to compare) and only when a latency gate failed.
    """
    failing = [gate for gate in failed if gate.type in LATENCY_GATES]
    here = analysis.stages[index].concurrency
    if not failing or here is None:
        return ""
    passed = [
        (spec.concurrency, spec.name)
        for spec, status in zip(analysis.stages[:index], stages[:index], strict=False)
        if spec.concurrency is not None
        and spec.concurrency < here
        and status.phase is StagePhase.SUCCESSFUL
    ]
    if not passed:
        return ""
    concurrency, name = max(passed)
    what = " and ".join(
        dict.fromkeys(
            "the tail" if gate.type is GateType.TAIL_LATENCY else "the speedup" for gate in failing
        )
    )
    return (
        f"; it passed stage {name} at concurrency {concurrency} but fails {what} at "
        f"concurrency {here}"
    )
