"""The contract between the gates and wherever engine counters are stored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from specdecode.domain.observations import AcceptanceCounts, MetricError


@dataclass(frozen=True)
class EngineSelector:
    """Which engine's series to read: the pods of one child Deployment."""

    namespace: str
    deployment: str

    @property
    def pod_regex(self) -> str:
        """Pods of a Deployment are named `<deployment>-<replicaset hash>-<suffix>`."""
        return f"{self.deployment}-[a-z0-9]+-[a-z0-9]+"


class AcceptanceSource(Protocol):
    """Spec-decode counters of one engine over a window."""

    async def acceptance(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> AcceptanceCounts | MetricError:
        """Counter increases between `start` and `end`.

        Why a window rather than totals: a stage is judged only on its own traffic after
        warm-up, and counters reset when a pod restarts. A backend failure is returned as
        `MetricError` (a verdict of Error), never raised and never turned into zeros.
        """
        ...


class StepLatencySource(Protocol):
    """vLLM's own per-step inter-token latency histogram, as a cross-check."""

    async def step_itl_quantile(
        self, engine: EngineSelector, start: datetime, end: datetime, quantile: float
    ) -> float | MetricError | None:
        """The quantile of `vllm:inter_token_latency_seconds` over [start, end].

        Why only a cross-check: the histogram has one sample per engine step (a step under
        spec decode may emit several tokens) and buckets too coarse to resolve a 10 %
        change, so gates judge the client's exact per-token timings instead. None means
        the engine took no steps in the window.
        """
        ...
