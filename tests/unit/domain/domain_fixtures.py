"""Builders for domain tests: specs, observations and a fake clock (plain datetimes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from specdecode.api import (
    AnalysisSpec,
    EngineSpec,
    GateSpec,
    GateType,
    ModelSpec,
    Phase,
    SpecDecodeRolloutSpec,
    SpeculativeConfig,
    StageSpec,
)
from specdecode.api.speculative import fingerprint_of
from specdecode.domain.cadence import next_timed_event
from specdecode.domain.decision import Decision
from specdecode.domain.evidence import Parts, evidence_parts
from specdecode.domain.machine import decide
from specdecode.domain.observations import (
    AcceptanceCounts,
    AcceptedMoments,
    ChildRole,
    ChildState,
    LatencyBlock,
    LatencySamples,
    MetricError,
    Observations,
    StageObservations,
)
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.sketch import Sketch
from specdecode.reconciler.analysis_boundary import evidence_of, plan_of
from specdecode.reconciler.guard_boundary import guard_plan_of
from specdecode.reconciler.rollout_boundary import settings_of
from specdecode.speculative_document import RunnableConfig

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)

EAGLE3 = SpeculativeConfig(
    method="eagle3", model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", num_speculative_tokens=3
)
NGRAM = SpeculativeConfig(method="ngram", num_speculative_tokens=4, prompt_lookup_max=4)


def at(seconds: float) -> datetime:
    """The fake clock: T0 plus some seconds."""
    return T0 + timedelta(seconds=seconds)


def acceptance_stage(**overrides: Any) -> StageSpec:
    fields: dict[str, Any] = {
        "name": "acceptance",
        "concurrency": 4,
        "warmup_seconds": 30,
        "min_duration_seconds": 60,
        "max_duration_seconds": 300,
        "gates": [GateSpec(name="alpha", type=GateType.ACCEPTANCE, min_alpha=0.55)],
    }
    fields.update(overrides)
    return StageSpec(**fields)


def latency_stage(**overrides: Any) -> StageSpec:
    fields: dict[str, Any] = {
        "name": "tail-latency",
        "concurrency": 32,
        "warmup_seconds": 30,
        "min_duration_seconds": 60,
        "max_duration_seconds": 300,
        "gates": [GateSpec(name="p99-itl", type=GateType.TAIL_LATENCY, tolerance=0.10)],
    }
    fields.update(overrides)
    return StageSpec(**fields)


def make_spec(
    speculative: SpeculativeConfig | None = EAGLE3,
    stages: list[StageSpec] | None = None,
    **analysis: Any,
) -> SpecDecodeRolloutSpec:
    analysis_fields: dict[str, Any] = {
        "stages": stages if stages is not None else [acceptance_stage(), latency_stage()],
        "interval_seconds": 15,
        "progress_deadline_seconds": 600,
    }
    analysis_fields.update(analysis)
    return SpecDecodeRolloutSpec(
        model=ModelSpec(name="meta-llama/Llama-3.1-8B-Instruct"),
        engine=EngineSpec(image="vllm/vllm-openai:v0.11.2"),
        speculative=speculative,
        analysis=AnalysisSpec(**analysis_fields),
    )


def ready(config: RunnableConfig | None) -> ChildState:
    return ChildState(
        exists=True,
        config_fingerprint=fingerprint_of(config),
        desired_replicas=1,
        ready_replicas=1,
        updated_replicas=1,
    )


def pending(reason: str | None = None, crash: str | None = None) -> ChildState:
    return ChildState(
        exists=True,
        desired_replicas=1,
        ready_replicas=0,
        updated_replicas=1,
        unschedulable_reason=reason,
        crash_reason=crash,
    )


def observe(
    generation: int = 1,
    production: ChildState | None = None,
    baseline: ChildState | None = None,
    candidate: ChildState | None = None,
    **fields: Any,
) -> Observations:
    children = {
        role: state
        for role, state in (
            (ChildRole.PRODUCTION, production),
            (ChildRole.BASELINE, baseline),
            (ChildRole.CANDIDATE, candidate),
        )
        if state is not None
    }
    return Observations(generation=generation, children=children, **fields)


def shadows_ready(
    stable: RunnableConfig | None = None,
    candidate: RunnableConfig | None = EAGLE3,
    candidate_state: ChildState | None = None,
    **fields: Any,
) -> Observations:
    """Production on the stable config, both shadows ready (unless `candidate_state`)."""
    return observe(
        production=ready(stable),
        baseline=ready(stable),
        candidate=candidate_state or ready(candidate),
        **fields,
    )


def acceptance(alpha: float, drafts: float, k: int = 3, requests: float = 0.0) -> AcceptanceCounts:
    """Counts with exactly this alpha: per-position P(L >= i) = r^i, r solved for alpha."""
    low, high = 0.0, 1.0
    for _ in range(60):
        r = (low + high) / 2
        low, high = (r, high) if sum(r ** (i + 1) for i in range(k)) / k < alpha else (low, r)
    per_position = tuple(drafts * r ** (i + 1) for i in range(k))
    return AcceptanceCounts(
        drafts=drafts,
        draft_tokens=drafts * k,
        accepted_tokens=sum(per_position),
        per_position_accepted=per_position,
        requests=requests,
    )


def streamed(counts: AcceptanceCounts, requests: int | None = None) -> LatencySamples:
    """The load pods' report that goes with `counts`: per-request moments at the same alpha.

    `requests` (default: the counts' own, else 300) finished requests share the drafts
    evenly; their accepted tokens alternate 30 % around alpha k per step (a spread of per-
    request alpha like a mixed prompt set's), so the streamed alpha equals the counters'
    and the requests' spread is measured, not zero.
    """
    n = requests or round(counts.requests) or 300
    steps = counts.drafts / n
    per_step = counts.accepted_tokens / counts.drafts
    per_request = [(steps, per_step * steps * (1.3 if i % 2 else 0.7)) for i in range(n)]
    if n % 2:  # keep the total exact: the odd one out at the mean
        per_request[-1] = (steps, per_step * steps)
    block = LatencyBlock(start=0.0, seconds=2.0, accepted=AcceptedMoments.of(per_request))
    return LatencySamples(blocks=(block,), shards=1)


def stage_obs(
    stage: str,
    acceptance_counts: AcceptanceCounts | MetricError | None = None,
    baseline: LatencySamples | MetricError | None = None,
    candidate: LatencySamples | MetricError | None = None,
    load_report: bool = True,
) -> StageObservations:
    """A stage's observations; counts come with the load pods' moments unless `candidate`
    is given or `load_report` is False (the load pods reported nothing)."""
    counts = acceptance_counts
    if load_report and candidate is None and isinstance(counts, AcceptanceCounts):
        candidate = streamed(counts) if counts.drafts > 0 else LatencySamples(shards=1)
    return StageObservations(
        stage_name=stage,
        candidate_acceptance=acceptance_counts,
        baseline_latency=baseline,
        candidate_latency=candidate,
    )


def run(
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    observations: Observations,
    seconds: float,
) -> Decision:
    return decide(status, planned(spec, observations, status), at(seconds))


def planned(
    spec: SpecDecodeRolloutSpec, observations: Observations, status: RolloutState | None = None
) -> Observations:
    """`observations` with the spec's analysis and guard plans and its settings, as observe
    builds them for `status` (the kernel answers for its candidate; `decide` refuses
    observations without them); a plan already set is kept."""
    plan = observations.plan if observations.plan is not None else plan_of(spec)
    candidate = None if status is None else status.candidate_speculative
    settings = settings_of(spec, candidate)
    return replace(observations, plan=plan, guard=guard_plan_of(spec), settings=settings)


def timed_event(
    spec: SpecDecodeRolloutSpec, status: RolloutState, now: datetime
) -> datetime | None:
    """`cadence.next_timed_event` on the spec's views as observe builds them."""
    return next_timed_event(plan_of(spec), guard_plan_of(spec), status, now)


def current_evidence(spec: SpecDecodeRolloutSpec, observations: Observations) -> Parts:
    """`evidence.evidence_parts` on the spec's evidence as observe builds it."""
    return evidence_parts(evidence_of(spec), observations)


def analyzing(spec: SpecDecodeRolloutSpec, seconds: float = 0) -> RolloutState:
    """A status in Analyzing, stage 0 started at `seconds` (plain-decoding stable)."""
    first = run(spec, RolloutState(), observe(), seconds)
    second = run(spec, first.status, shadows_ready(), seconds)
    assert second.status.phase.value == "Analyzing", second.status
    return second.status


def status_in(spec: SpecDecodeRolloutSpec, phase: str) -> RolloutState:
    """A realistic status in `phase` (reached through decide where possible), at t=0."""
    fresh = RolloutState()
    deploying = run(spec, fresh, observe(), 0).status
    if phase == "Deploying":
        return deploying
    analysis = analyzing(spec)
    if phase == "Analyzing":
        return analysis
    if phase == "Paused":
        return analysis.model_copy(update={"phase": Phase.PAUSED, "current_stage": None})
    promoting = run(spec, analysis, shadows_ready(action="promote"), 0).status
    if phase == "Promoting":
        return promoting
    promoted = run(spec, promoting, observe(production=ready(EAGLE3)), 0).status
    if phase == "Promoted":
        return promoted
    if phase == "Degraded":
        unready = run(spec, promoted, observe(production=pending()), 100).status
        return run(spec, unready, observe(production=pending()), 10_000).status
    if phase == "RolledBack":
        return run(spec, analysis, shadows_ready(action="abort"), 0).status
    if phase == "Failed":
        return run(
            spec, analysis, shadows_ready(traffic_error="prompts: no such ConfigMap"), 0
        ).status
    raise ValueError(phase)


# Messages the scheduler and the kubelet would give, for "why" assertions.
GPU_FULL = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
CRASH = "CrashLoopBackOff: ValueError: draft model head mismatch"


def blocked_samples(
    itl: Sequence[float] = (),
    blocks: int = 60,
    time_per_output_token: Sequence[float] = (),
    requests_ok: int = 0,
    requests_failed: int = 0,
) -> LatencySamples:
    """Exact values dealt round-robin into 2-second blocks, as the load pods report them.

    The same values serve as per-chunk and per-token ITL (one token per chunk). Round-robin
    keeps each block a fair sample, so the cluster-robust bound sees independent blocks.
    """
    made = []
    for b in range(blocks):
        made.append(
            LatencyBlock(
                start=2.0 * b,
                seconds=2.0,
                per_chunk_itl=Sketch.of(itl[b::blocks]),
                per_token_itl=Sketch.of(itl[b::blocks]),
                time_per_output_token=Sketch.of(time_per_output_token[b::blocks]),
                requests_ok=requests_ok // blocks + (b < requests_ok % blocks),
                requests_failed=requests_failed // blocks + (b < requests_failed % blocks),
                chunks=len(itl[b::blocks]),
            )
        )
    return LatencySamples(blocks=tuple(made), window_seconds=2.0 * blocks, shards=1)
