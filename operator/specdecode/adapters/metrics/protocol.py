"""The contract between the gates and wherever engine counters are stored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from specdecode.domain.drift import AcceptanceBlock
from specdecode.domain.observations import (
    AcceptanceCounts,
    EngineOutcomes,
    MetricError,
    StepHistogram,
)


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
    """vLLM's own per-step inter-token latency histogram of one engine over a window."""

    async def step_itl_histogram(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> StepHistogram | MetricError:
        """The bucket increases of `vllm:inter_token_latency_seconds` over [start, end].

        Why buckets and not a quantile: with Mirror traffic this histogram is the only ITL
        there is, and a gate can only bound a quantile by bucket edges if it sees the counts
        (an interpolated quantile has no confidence bound). No steps in the window is an
        empty histogram (zero total: no data), never an error; a failed backend is a
        `MetricError`, never raised. `steps` carries the window's engine-step count (None
        when the engine does not export it), for observations that share a step.
        """
        ...


class RequestOutcomeSource(Protocol):
    """vLLM's own count of one engine's finished requests by reason, over a window."""

    async def request_outcomes(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> EngineOutcomes | MetricError:
        """`vllm:request_success_total` increases by `finished_reason` over [start, end],
        its resets in the window, and the requests in flight at `end`.

        Why: under Mirror traffic the responses go to the gateway, so the engine's count is
        the only record of failed requests; the resets and the in-flight count say what
        that count cannot have seen (`domain.gates.mirror_outcomes`). No series is
        `scraped` False (unknown, never zero failures); a failed backend is a
        `MetricError`, never raised.
        """
        ...


class RunningRequestsSource(Protocol):
    """Production's running-request histogram, to weight a tuning's loads by reality."""

    async def running_histogram(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> dict[int, float] | MetricError:
        """Concurrency -> share of time over [start, end] of `vllm:num_requests_running`.

        Why a histogram and not a mean: which config wins flips at its break-even, so a
        mean of 8 made of half 1 and half 15 weighs the loads wrongly. Per engine (pod),
        as the tuning's ladder is. Nothing to go by (no series, or idle throughout) is an
        empty dict: unknown, and the tuning falls back; a failed backend is a
        `MetricError`, never raised.
        """
        ...


class EngineSeriesSource(Protocol):
    """Whether Prometheus holds any series of given engine pods (that it scrapes them)."""

    url: str

    async def pods_with_series(
        self, namespace: str, pods: Sequence[str]
    ) -> frozenset[str] | MetricError:
        """The pods among `pods` whose vLLM gauge Prometheus holds now.

        Why a gauge and not the gates' counters: it exists from an engine's start, drafts
        or not, so its absence means "not scraped", never "idle". None of them is an empty
        set; a failed backend is a `MetricError`, never raised.
        """
        ...

    async def engine_series_count(self) -> int | MetricError:
        """How many engine series Prometheus holds in all (for one line at start-up)."""
        ...


class AcceptanceBlocksSource(Protocol):
    """Production's spec-decode counters per time block, for the drift guard."""

    async def acceptance_blocks(
        self, engine: EngineSelector, start: datetime, end: datetime, block_seconds: int
    ) -> tuple[AcceptanceBlock, ...] | MetricError:
        """Draft and accepted tokens over each whole `block_seconds` block of [start, end],
        summed over the engine's pods, in time order. A block without samples is left out
        (no data, never zeros); a failed backend is a `MetricError`, never raised."""
        ...


class TailBlocksSource(Protocol):
    """Production's step-ITL histogram per time block, for the guard's latency half."""

    async def tail_blocks(
        self, engine: EngineSelector, start: datetime, end: datetime, block_seconds: int
    ) -> tuple[StepHistogram, ...] | MetricError:
        """The bucket increases of `vllm:inter_token_latency_seconds` over each whole
        `block_seconds` block of [start, end], summed over the engine's pods, in time
        order. A block without samples is left out (no data, never zeros); a failed
        backend is a `MetricError`, never raised."""
        ...
