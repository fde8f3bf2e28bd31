"""What the operator saw this reconcile: the input to `decide`.

Adapters gather these from the cluster, Prometheus and the shadow-traffic driver; the
domain only reads them. Each is a frozen value so a test can write one by hand.
A metric source that failed is represented as `MetricError`, never as zero or missing
data, so the gates can tell a flaky backend (Error) from too little traffic (Inconclusive).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from itertools import pairwise
from typing import TYPE_CHECKING, Generic, TypeVar

from specdecode.domain.analysis_plan import AnalysisPlan
from specdecode.domain.drift import ProductionAcceptance
from specdecode.domain.in_flight import InFlight
from specdecode.domain.latency_block import (
    BLOCK_FIELDS,
    AcceptedMoments,
    GroupEvidence,
    LatencyBlock,
    merge_values,
)
from specdecode.domain.sketch import Sketch

if TYPE_CHECKING:  # the load pods import this module and must not need pydantic
    from specdecode.domain.guard_model import GuardPlan
    from specdecode.domain.latency_drift import ProductionLatency
    from specdecode.domain.rollout_settings import RolloutSettings
    from specdecode.domain.source import SourceObservation

__all__ = ["AcceptedMoments", "LatencyBlock"]  # defined with their field table
T = TypeVar("T")


class ChildRole(StrEnum):
    """The three engine Deployments a rollout owns."""

    PRODUCTION = "production"
    BASELINE = "baseline"
    CANDIDATE = "candidate"


SHADOW_ROLES = (ChildRole.BASELINE, ChildRole.CANDIDATE)
"""The two shadows an analysis compares, baseline first (the order of every side pair)."""


@dataclass(frozen=True)
class ChildState:
    """One engine Deployment as the API server reports it."""

    exists: bool
    config_fingerprint: str | None = None  # the speculative config it was rendered with
    desired_replicas: int = 0
    ready_replicas: int = 0
    updated_replicas: int = 0
    unschedulable_reason: str | None = None  # a pod's PodScheduled=False message
    crash_reason: str | None = None  # CrashLoopBackOff / terminated message of a pod
    evidence: str | None = None  # `spec_evidence.engine_digest` it was rendered with (Owned)

    @property
    def ready(self) -> bool:
        """All desired replicas run the rendered config and pass readiness."""
        return (
            self.exists
            and self.ready_replicas >= self.desired_replicas
            and self.updated_replicas >= self.desired_replicas
        )


@dataclass(frozen=True)
class MetricError:
    """A metric source could not answer (timeout, 5xx, bad query)."""

    source: str
    message: str


# The series the gates name when a look cannot be judged without them (the adapters query
# these names; a reason naming what is missing must name what was asked for).
DRAFTS_SERIES = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS_SERIES = "vllm:spec_decode_num_draft_tokens_total"
ENGINE_STEPS_SERIES = "vllm:iteration_tokens_total_count"
# vLLM's `finished_reason`s of a request that ran to an end the engine chose (vLLM also
# counts "abort", a client that went away, and "error" in request_success_total).
COMPLETED_REASONS = ("stop", "length", "repetition")


@dataclass(frozen=True)
class AcceptanceCounts:
    """Spec-decode counter increases over the measuring window (from Prometheus).

    `per_position_accepted[i]` counts drafts in which at least i+1 tokens were accepted.
    All zero is never alpha = 0: without `drafts_scraped` it is no data (the series is
    absent), with it a real count of no drafts, which only enough completed requests turn
    into a finding (`gates.no_drafts`).
    """

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    per_position_accepted: tuple[float, ...] = ()
    # Requests the engine completed in the window, by its own count (COMPLETED_REASONS of
    # vllm:request_success_total: aborted and failed requests are not completed).
    requests: float = 0.0
    # An upper bound on the longest request the window finished, in generated tokens: the
    # highest reached bucket edge of vllm:request_generation_tokens (None: no histogram, or
    # a request beyond its last finite edge). Under Mirror traffic it bounds drafts per
    # request, which the counters' acceptance bound needs instead of an assumed
    # correlation (`acceptance_bound`).
    longest_request_tokens: float | None = None
    # Whether Prometheus answered the drafts and draft-tokens counters' series for the
    # window (a number, zero included). False (the default, fail closed): no such series
    # (no speculative config, relabelled away, not scraped yet) or NaN, so zeros mean unknown.
    drafts_scraped: bool = False


class _Total(Generic[T]):
    """A window's field read from its merged block (`LatencySamples.total`)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, samples: LatencySamples, owner: type | None = None) -> T:
        value: T = getattr(samples.total, self._name)
        return value


@dataclass(frozen=True)
class LatencySamples:
    """Client-side measurements of one engine over the measuring window, in seconds.

    The union of the window's blocks from every load shard of that side. `shards` counts
    the shards that answered; `gaps` says, in words, what the window is missing (a shard
    that restarted: its gap's blocks are dropped on every shard, because the engine saw
    less load then), so status can tell a thin window from a full one. `incomplete` says
    why the window cannot be judged at all (a load pod that does not answer: the engine ran
    below the stage's load, so what the others measured is not the stage's latency).
    """

    blocks: tuple[LatencyBlock, ...] = ()
    window_seconds: float = 0.0
    shards: int = 0
    gaps: tuple[str, ...] = ()
    incomplete: str | None = None

    @classmethod
    def from_values(
        cls,
        per_token_itl: Sequence[float] = (),
        per_chunk_itl: Sequence[float] = (),
        time_per_output_token: Sequence[float] = (),
        requests_ok: int = 0,
        requests_failed: int = 0,
        output_tokens: int = 0,
        window_seconds: float = 0.0,
        client_delay: Sequence[float] = (),
    ) -> LatencySamples:
        """One block of exact values (tests, simulations, benchmarks)."""
        block = LatencyBlock(
            start=0.0,
            seconds=window_seconds,
            per_chunk_itl=Sketch.of(per_chunk_itl),
            per_token_itl=Sketch.of(per_token_itl),
            time_per_output_token=Sketch.of(time_per_output_token),
            client_delay=Sketch.of(client_delay),
            requests_ok=requests_ok,
            requests_failed=requests_failed,
            output_tokens=output_tokens,
            chunks=len(per_chunk_itl),
        )
        return cls(blocks=(block,), window_seconds=window_seconds, shards=1)

    @cached_property
    def total(self) -> LatencyBlock:
        """The window's blocks merged into one (every field, by its kind in BLOCK_FIELDS)."""
        merged = {f.name: merge_values(f.kind, self.blocks, f.name) for f in BLOCK_FIELDS}
        return LatencyBlock(start=0.0, seconds=self.window_seconds, **merged)

    # The fields the gates read, by name: each reads `total` (one merge, from the table).
    per_chunk_itl = _Total[Sketch]()  # every chunk gap (stalls of failed requests included)
    per_token_itl = _Total[Sketch]()  # every chunk gap over its tokens, weighted by tokens
    time_per_output_token = _Total[Sketch]()  # one per request that had a first token
    client_delay = _Total[Sketch]()  # the instrument's own timestamp delay
    requests_ok = _Total[int]()  # requests that streamed to the end
    requests_failed = _Total[int]()  # failed requests, any outcome (`total.failures`: which)
    arrivals_skipped = _Total[int]()  # open-loop arrivals the sender fell too far behind
    output_tokens = _Total[int]()
    accepted = _Total[AcceptedMoments]()  # per-request acceptance sums
    by_traffic = _Total[Mapping[str, GroupEvidence]]()  # the same, per traffic group
    in_flight = _Total[InFlight | None]()  # the newest block's requests in flight (None: unknown)


@dataclass(frozen=True)
class StepHistogram:
    """vLLM's step-ITL histogram of one engine over the measuring window (seconds).

    Kept as buckets, not as a quantile: the bucket counts say how many observations lie at
    or below each edge, which is what a distribution-free bound on a quantile needs (see
    `step_histogram`). `upper_bounds` ascend and end with math.inf; `cumulative_counts`
    follow Prometheus's `le` semantics (observations <= the bound) and are increases over
    the window, so floats: `increase()` extrapolates to the window's edges. One observation
    per request per engine step (a step under spec decode may emit several tokens). Empty
    means the engine took no steps in the window.

    `steps` is the number of engine steps in the same window (`vllm:iteration_tokens_total`
    has one observation per step), None when unknown. Why: every request of a batch records
    the same step duration, so the observations are not independent and the count
    overstates the sample; the gate treats each step as one observation instead, and with
    the step count unknown judges nothing (`step_histogram.unknown_steps`).
    """

    upper_bounds: tuple[float, ...] = ()
    cumulative_counts: tuple[float, ...] = ()
    steps: float | None = None

    def __post_init__(self) -> None:
        if len(self.upper_bounds) != len(self.cumulative_counts):
            raise ValueError("step histogram: one cumulative count per bucket bound")
        if any(a >= b for a, b in pairwise(self.upper_bounds)):
            raise ValueError("step histogram: bucket bounds must ascend")
        if self.upper_bounds and self.upper_bounds[-1] != math.inf:
            raise ValueError("step histogram: the last bucket must be +Inf")
        if self.steps is not None and not self.steps >= 0:  # also rejects NaN
            raise ValueError("step histogram: steps must be a count >= 0")

    @property
    def total(self) -> float:
        """Observations in the window: the +Inf bucket's count (the largest, if disordered)."""
        return max(self.cumulative_counts, default=0.0)


@dataclass(frozen=True)
class ServerStepHistograms:
    """Both engines' step-ITL histograms over the same window, for the ServerStep ITL."""

    baseline: StepHistogram
    candidate: StepHistogram


# vLLM's request-outcome counter, one series per `finished_reason` (created at 0 at start).
REQUEST_OUTCOMES_SERIES = "vllm:request_success_total"
# The reasons of a request the engine ended without serving it: "error" (a request-level
# internal error, always an HTTP 500) and "abort" (the client, under Mirror the gateway,
# went away: a shadow that timed out). Mirror's ErrorRate counts both as failures.
FAILED_REASONS = ("error", "abort")


@dataclass(frozen=True)
class EngineOutcomes:
    """One engine's finished requests over the window by `finished_reason` (vLLM's count).

    Under Mirror traffic the only outcomes there are: the gateway discards the mirrored
    responses. `restarts` counts resets of the counter in the window (an engine restarted:
    the requests in flight when it died and those sent while it was down are counted by
    no reason). `scraped` False: no series answered (not exported, not scraped), unknown.
    """

    by_reason: Mapping[str, float] = field(default_factory=dict)
    restarts: float = 0.0
    scraped: bool = False
    # Requests running or waiting at the window's end and start (vLLM's gauges; 0 when
    # unknown): arrivals = finished + in flight at the end - in flight at the start,
    # compared across the two engines (`mirror_outcomes`).
    in_flight: float = 0.0
    in_flight_at_start: float = 0.0
    # Both in-flight readings answered (vLLM's running and waiting gauges at both window
    # ends): unknown is never zero, a request hung in the engine is counted by no reason.
    in_flight_known: bool = False

    @property
    def arrivals(self) -> float:
        """Requests that reached the engine in the window (finished or still in it)."""
        return self.total + self.in_flight - self.in_flight_at_start

    @property
    def failed(self) -> int:
        """Requests the engine ended without serving (FAILED_REASONS), rounded."""
        return round(sum(self.by_reason.get(reason, 0.0) for reason in FAILED_REASONS))

    @property
    def total(self) -> int:
        """Every request the engine finished in the window, any reason, rounded."""
        return round(sum(self.by_reason.values()))


@dataclass(frozen=True)
class EngineOutcomePair:
    """Both shadow engines' request outcomes over the same window (Mirror's ErrorRate)."""

    baseline: EngineOutcomes
    candidate: EngineOutcomes
    # The share of live requests each RequestMirror filter copies (mirrorPercent / 100),
    # each filter on its own draw: how far the two engines' arrivals may differ by chance.
    mirror_share: float = 1.0


@dataclass(frozen=True)
class StageObservations:
    """Measurements of the stage in progress, from its measuring window only."""

    stage_name: str
    candidate_acceptance: AcceptanceCounts | MetricError | None = None
    baseline_latency: LatencySamples | MetricError | None = None
    candidate_latency: LatencySamples | MetricError | None = None
    server_step_itl: ServerStepHistograms | MetricError | None = None
    engine_outcomes: EngineOutcomePair | MetricError | None = None


@dataclass(frozen=True)
class Observations:
    """Everything `decide` may look at besides the spec, the previous status and the time."""

    generation: int
    children: dict[ChildRole, ChildState] = field(default_factory=dict)
    action: str | None = None  # value of the specdecode.io/action annotation, if any
    stage: StageObservations | None = None
    traffic_error: str | None = None  # the shadow driver could not run (bad prompts...)
    # Promoted: production's counters in time blocks for the guard's look due now, if any.
    production_acceptance: ProductionAcceptance | MetricError | None = None
    # ... and its step-ITL histogram in the same blocks (the guard's latency half).
    production_latency: ProductionLatency | MetricError | None = None
    # The spec as the guard reads it (`reconciler.guard_boundary`); None: not built (a
    # hand-written value), which `decide` refuses (`guard_plan`).
    guard: GuardPlan | None = None
    source: SourceObservation | None = None  # spec.workloadRef: the Deployment judged
    # A hash of the referenced prompt set's content, read while an analysis runs (None: not
    # read, built-in prompts, or unreadable now); part of the evidence (`domain.evidence`).
    prompts_digest: str | None = None
    # The spec's analysis as the domain reads it (`reconciler.analysis_boundary`); None: not
    # built (observations written by hand), which `decide` refuses (`analysis_plan`).
    plan: AnalysisPlan | None = None
    # The spec as the decision reads it (`reconciler.rollout_boundary`); None: not built,
    # which `decide` refuses (`rollout_settings`).
    settings: RolloutSettings | None = None

    def analysis_plan(self) -> AnalysisPlan:
        """The spec's analysis as observe built it: no verdict, offer, evidence or shadow
        load is decided without it, so a missing one is an error, never a default."""
        if self.plan is None:
            raise ValueError("observations without the analysis plan (observe builds it)")
        return self.plan

    def guard_plan(self) -> GuardPlan:
        """The spec as the drift guard reads it, as observe built it (an error if missing:
        a guard that silently judged nothing would never clear a recorded drift)."""
        if self.guard is None:
            raise ValueError("observations without the guard's plan (observe builds it)")
        return self.guard

    def rollout_settings(self) -> RolloutSettings:
        """The spec as the decision reads it, as observe built it (an error if missing:
        no phase is stepped on a default spec)."""
        if self.settings is None:
            raise ValueError("observations without the rollout's settings (observe builds them)")
        return self.settings

    def child(self, role: ChildRole) -> ChildState:
        """The observed state of a child; absent means it does not exist."""
        return self.children.get(role, ChildState(exists=False))
