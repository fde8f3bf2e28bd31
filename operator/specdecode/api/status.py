"""`status`: what is true now, computed by the domain and written whole by the operator.

Everything the operator needs to continue after a restart lives here (phase, the stage in
progress and when it began, the configs in play), so the process itself holds no state.
Conditions follow the shape kstatus reads (`Ready`, `Progressing`, `Degraded`, each with
`observedGeneration`), so Flux and Argo CD report health without a plugin.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from specdecode.api.acceptance_by_traffic import TrafficAcceptance
from specdecode.api.adoption import WorkloadStatus
from specdecode.api.base import KubeModel, optional
from specdecode.api.gate_spec import GateType, ItlDefinition
from specdecode.api.guard import DriftStatus as DriftStatus  # noqa: PLC0414 (the domain's way in)
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.status_findings import ApplyFindings

# Re-exported: the wire spells these as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import MAX_LOOKS_KEPT as MAX_LOOKS_KEPT  # noqa: PLC0414
from specdecode.vocabulary import MAX_TRAFFIC_GROUPS
from specdecode.vocabulary import ConditionStatus as ConditionStatus  # noqa: PLC0414
from specdecode.vocabulary import Evidence as Evidence  # noqa: PLC0414
from specdecode.vocabulary import GateVerdict as GateVerdict  # noqa: PLC0414
from specdecode.vocabulary import Phase as Phase  # noqa: PLC0414
from specdecode.vocabulary import StagePhase as StagePhase  # noqa: PLC0414


class Condition(KubeModel):
    """A metav1.Condition."""

    type: str = Field(description="Ready, Progressing or Degraded.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str = Field(description="CamelCase reason, for machines.")
    message: str = Field(default="", description="Why, for people.")
    last_transition_time: datetime = Field(description="When status last changed.")
    observed_generation: int | None = optional("Generation judged.")


class GateLook(KubeModel):
    """One evaluation of a gate, kept in status as Argo keeps its measurements."""

    measured_at: datetime = Field(description="When the look was taken.")
    measured_seconds: float = Field(description="Seconds of measuring window it saw.")
    verdict: GateVerdict = Field(description="The look's verdict.")
    value: float | None = optional("Point estimate.")
    lower_bound: float | None = optional("Lower confidence bound.")
    upper_bound: float | None = optional("Upper confidence bound.")
    samples: int | None = optional("Samples (or tokens) it used.")
    units: int | None = optional(
        "Independent units the bound rests on: requests (Acceptance, "
        "AcceptedLength, ErrorRate), time blocks of loadGenerator.blockSeconds (TailLatency, "
        "Speedup), steps (ServerStep)."
    )
    error: float | None = optional(
        "One-sided error each bound of this look was held at (the look's "
        "share of the sequential error budget)."
    )


class GateResult(KubeModel):
    """A gate's latest measurement, its bound and its verdict."""

    name: str = Field(description="Gate name.")
    type: GateType = Field(description="Gate type.")
    verdict: GateVerdict = Field(default=GateVerdict.PENDING, description="Latest verdict.")
    reason: str = Field(default="", description="Why this verdict, with the numbers.")
    value: float | None = optional("Point estimate (alpha, ratio...).")
    lower_bound: float | None = optional("Lower confidence bound.")
    upper_bound: float | None = optional("Upper confidence bound.")
    threshold: float | None = optional("What the bound is judged against.")
    samples: int | None = optional("Draft tokens or latency samples.")
    baseline_value: float | None = optional("Baseline's figure, if any.")
    candidate_value: float | None = optional("Candidate's figure.")
    server_baseline_value: float | None = optional(
        "TailLatency: the baseline's quantile of vLLM's own step-ITL histogram "
        "(one sample per request per engine step, coarse buckets); judged only by ServerStep "
        "gates, else a cross-check of the client's timings."
    )
    server_candidate_value: float | None = optional(
        "TailLatency cross-check: the same for the candidate."
    )
    units: int | None = optional(
        "Independent units the bound rests on (requests, time blocks or steps)."
    )
    mean_acceptance_length: float | None = optional(
        "Acceptance: tokens per verify step, 1 + accepted / drafts."
    )
    stream_value: float | None = optional(
        "Acceptance, AcceptedLength: the same figure from the load pods' streamed "
        "chunks (per-request accepted lengths), a cross-check of the engine's counters."
    )
    acceptance_per_position: list[float] = Field(
        default_factory=list,
        description="Acceptance: share of drafts with at least i+1 tokens accepted, per i.",
    )
    itl_definition: ItlDefinition | None = optional("ITL definition.")
    close_call: bool = Field(
        default=False,
        description="Inconclusive on enough data because the interval holds the threshold: "
        "the estimate sits at the gate's limit (see the stage's message for the limits that "
        "would have decided it).",
    )
    dry_run: bool = Field(default=False, description="Reported only, never enforced.")
    fail_only: bool = Field(
        default=False, description="May fail the stage; the stage does not wait for its pass."
    )
    failures: int = Field(default=0, description="Failed evaluations so far in this stage.")
    inconclusives: int = Field(default=0, description="Inconclusive evaluations so far.")
    consecutive_errors: int = Field(default=0, description="Errors in a row (metric backend).")
    measured_at: datetime | None = optional("When last evaluated.")
    look_count: int = Field(default=0, description="Looks taken in this stage run.")
    looks: list[GateLook] = Field(
        default_factory=list,
        description=f"The latest looks of this stage run, oldest first (at most {MAX_LOOKS_KEPT}).",
    )


class LoadStatus(KubeModel):
    """The stage run's shadow-load pods as of the last look: are they measuring honestly?"""

    shards: str = Field(
        default="", description="Load shards that answered, baseline/candidate (e.g. 2/2)."
    )
    requests: int = Field(default=0, description="Requests finished in the window, both sides.")
    client_delay_p99_ms: float | None = optional(
        "P99 of the load clients' own timestamp delay (worst side), in ms: a "
        "look is Inconclusive when it exceeds 5 % of the latency being judged."
    )
    notes: list[str] = Field(
        default_factory=list,
        max_length=8,
        description="What the window lacks: restarted or silent load pods.",
    )
    outcomes: list[str] = Field(
        default_factory=list,
        max_length=2,
        description="Each side's requests in the window by outcome (ok, http_<status>, "
        "stream_cut, stream_error, timeout, connect_error), stalls (waits that ended a "
        "failed request, counted in the latency data), the P99 time a request held its "
        "slot and the requests in flight at the window's end with the longest silence, "
        "e.g. 'candidate: 412 ok, 3 timeout; 3 stalls; slot P99 2.41 s; 32 in flight, "
        "longest silent 12.3 s'.",
    )
    acceptance_by_traffic: list[TrafficAcceptance] = Field(
        default_factory=list,
        max_length=MAX_TRAFFIC_GROUPS,
        description="The candidate's acceptance per traffic group (class, temperature band, "
        "output length band) over the window, largest groups first (`other` last): which "
        "traffic a config fails.",
    )


class StageStatus(KubeModel):
    """A stage's progress and its gates."""

    name: str = Field(description="Stage name.")
    phase: StagePhase = Field(default=StagePhase.PENDING, description="Stage phase.")
    started_at: datetime | None = optional("When load began.")
    measure_from: datetime | None = optional("End of warm-up.")
    finished_at: datetime | None = optional("When it ended.")
    message: str = Field(default="", description="Why it ended as it did.")
    inconclusive_runs: int = Field(
        default=0, description="Runs of this stage (in this analysis) that ended Inconclusive."
    )
    gates: list[GateResult] = Field(default_factory=list, description="Per-gate results.")
    load: LoadStatus | None = optional(
        "The shadow-load pods (Prompts traffic) or the splitter (Mirror "
        "traffic, Splitter pairing) of this stage run."
    )
    evidence: Evidence | None = optional(
        "What this stage run's verdicts rest on: ClientSideReplayed (prompts "
        "replayed by load pods), ClientSidePaired (mirrored live requests sent to both "
        "shadows at once by the splitter, timed per chunk) or ServerSide (the engines' own "
        "metrics: Mirror traffic with mirrorPairing ServerSide)."
    )


class MirrorStatus(KubeModel):
    """Mirror traffic through the splitter: where the live copies go, and who sends them."""

    splitter_service: str = Field(
        description="The splitter's Service as `name:port` (`<rollout>-splitter:8080`), "
        "there for the rollout's life; a RequestMirror, mesh mirror or tee of yours posts "
        "live requests to it (between stages it has no endpoints and the copies are dropped)."
    )
    http_route: str | None = optional(
        "The HTTPRoute the operator writes its mirror on while a stage runs "
        "(spec.analysis.traffic.httpRoute); unset (always with a workloadRef): the operator "
        "writes no route and the mirror toward splitterService is yours to add.",
    )


class SpecDecodeRolloutStatus(KubeModel):
    """The observed state of a SpecDecodeRollout."""

    observed_generation: int | None = optional("Generation acted on.")
    phase: Phase = Field(default=Phase.PENDING, description="Rollout phase.")
    reason: str | None = optional("CamelCase reason of the latest transition (e.g. GateFailed).")
    message: str = Field(default="", description="What is happening, or why it stopped.")
    stable_speculative: SpeculativeConfig | None = optional(
        "Config production runs now; empty means plain decoding."
    )
    stable_fingerprint: str | None = optional("Hash of the stable config.")
    candidate_speculative: SpeculativeConfig | None = optional(
        "Config under analysis (the desired one)."
    )
    candidate_fingerprint: str | None = optional("Hash of the desired config this status is about.")
    phase_since: datetime | None = optional("When the phase began.")
    analysis_started_at: datetime | None = optional("Analysis start.")
    analysis_fingerprint: str | None = optional(
        "Hash of the evidence the analysis measures: its plan (traffic, stages, "
        "cadence, limits), what the engines run and the prompt set's content (a change of "
        "any restarts it: EvidenceChanged).",
        max_length=16,
    )
    evidence: list[str] | None = optional(
        "The evidence part by part, as `part=hash` (a spec field such as "
        "engine.image, the prompt set, an adopted source's pod template), recorded when the "
        "analysis starts; a restart names the parts that changed. A list, not a map: status "
        "is written as a merge patch, which replaces a list whole but keeps a map's removed "
        "keys (a stale part would restart the analysis on every reconcile)."
    )
    current_stage: str | None = optional("Stage running now.")
    current_stage_index: int | None = optional("Its index.")
    stages: list[StageStatus] = Field(default_factory=list, description="Per-stage results.")
    verdict: str | None = optional("Promoted or RolledBack, once the analysis has ended.")
    alpha: str | None = optional("Latest alpha with bounds (display).")
    itl_ratio: str | None = optional("Latest candidate/baseline P99 ITL ratio (display).")
    previous_stable_speculative: SpeculativeConfig | None = optional(
        "The config production ran before the last promotion (empty: plain "
        "decoding); what `guard.onDrift: Rollback` returns to."
    )
    drift: DriftStatus | None = optional("Production's acceptance found below its threshold.")
    schedule_offer: SpeculativeConfig | None = optional(
        "After a latency gate failed where a lower concurrency passed (vLLM "
        "0.24+): the candidate with a per-batch-size schedule that speculates only up to "
        "the concurrency that passed. Analysed only when set as spec.speculative, or with "
        "analysis.scheduleFallback: Analyze."
    )
    analysed_for: str | None = optional(
        "Fingerprint of the desired config (spec.speculative) while the "
        "analysis is of its schedule offer (candidateFingerprint is then the offer's); "
        "kept after that offer is promoted."
    )
    reanalysed: str | None = optional(
        "Fingerprint of a config analysed again after a drift (guard.onDrift: "
        "Reanalyze): a second drift of it keeps production on plain decoding."
    )
    workload: WorkloadStatus | None = optional(
        "With spec.workloadRef: the source, the labels the shadows dropped and "
        "the patch that promotes the passed config (GitOps)."
    )
    mirror: MirrorStatus | None = optional(
        "With Mirror traffic through the splitter: the Service to mirror live "
        "requests to, and the route the operator writes (none with a workloadRef).",
    )
    apply_findings: ApplyFindings | None = optional(
        "What the operator's last writes found in their way: objects named like "
        "a child that the rollout does not own, a refused Patch promotion (shown as Degraded).",
    )
    conditions: list[Condition] = Field(default_factory=list, description="Ready, Progressing...")
