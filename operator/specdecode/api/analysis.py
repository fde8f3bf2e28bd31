"""`spec.analysis`: shadow traffic and ordered stages, each judged by its gates.

Defaults follow the measure-first recipe: a low-concurrency stage gated on what makes the
method pay, then a production-concurrency stage gated on the P99 stall and TPOT speedup,
both with an ErrorRate gate; every method gets a judged gate in every stage, since a stage
passes only on evidence. Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from specdecode.api.analysis_rules import ANALYSIS_RULES, STAGE_RULES
from specdecode.api.base import KubeModel, RuledModel, optional, section
from specdecode.api.gate_spec import GateSpec, GateType, ItlDefinition, LabelName, PlainDecoding
from specdecode.api.speculative import NO_SPECULATION, SpeculativeMethod
from specdecode.api.traffic import TrafficSpec

# Re-exported: the wire spells it as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import ScheduleFallback as ScheduleFallback  # noqa: PLC0414

# alpha is the right proxy for a fixed, small k; ngram and suffix propose variable lengths.
FIXED_K_METHODS = [
    SpeculativeMethod.EAGLE,
    SpeculativeMethod.EAGLE3,
    SpeculativeMethod.MTP,
    SpeculativeMethod.DRAFT_MODEL,
]
VARIABLE_LENGTH_METHODS = [SpeculativeMethod.NGRAM, SpeculativeMethod.SUFFIX]
# Methods with no method-specific gate (ngram_gpu, dflash, dspark, medusa, mlp_speculator),
# and plain decoding ("none": speculative unset, e.g. speculation turned off through Git):
# judged on what every candidate must show, the tail and the speedup.
METHOD_NEUTRAL_METHODS: list[SpeculativeMethod | PlainDecoding] = [
    *(
        method
        for method in SpeculativeMethod
        if method not in FIXED_K_METHODS and method not in VARIABLE_LENGTH_METHODS
    ),
    NO_SPECULATION,
]


class StageSpec(RuledModel):
    """One analysis stage: a load shape held long enough for its gates to decide."""

    cross_field_rules = (STAGE_RULES,)

    name: LabelName = Field(description="Stage name, unique within the rollout.")
    concurrency: int | None = optional(
        "Closed loop: requests in flight per engine. Prompts traffic needs one "
        "of concurrency or requestRate; Mirror traffic ignores both (live traffic sets the "
        "load).",
        ge=1,
        le=4096,
    )
    request_rate: float | None = optional(
        "Open loop: requests per second per engine (Prompts traffic).", gt=0, le=10000
    )
    warmup_seconds: int = Field(
        default=30, ge=0, le=3600, description="Load before measuring starts (not judged)."
    )
    min_duration_seconds: int = Field(
        default=60, ge=1, description="Measure at least this long before a verdict."
    )
    max_duration_seconds: int = Field(
        default=600, ge=1, description="End the stage here; undecided gates are Inconclusive."
    )
    live_canary: bool = Field(
        default=False,
        description="Candidate pods also join the production Service for this stage.",
    )
    gates: list[GateSpec] = Field(
        default_factory=list, max_length=16, description="Gates judged during this stage."
    )

    @model_validator(mode="after")
    def _gate_names_unique(self) -> StageSpec:
        names = [gate.name for gate in self.gates]
        if len(names) != len(set(names)):
            raise ValueError(f"stage {self.name}: gates: names must be unique")
        return self


def default_stages() -> list[StageSpec]:
    """The recipe: acceptance at low concurrency, then stalls, speedup and errors at production's.

    Both stages judge ErrorRate, but differently: a pass needs clean requests in proportion
    to 1 / maxErrorRate (0 failed of n bounds the extra failure rate by about z^2 / n at the
    look's z of 2.5-3, so 0.02 needs ~300-450 per side), and 4 streams of 256-token requests
    finish only ~160-240 in a stage's 600 s on slow (80 ms) steps. So stage 0 makes a
    fail-only gross check (Failed once the extra failure rate is surely over 0.1; the stage
    never waits for it to pass, so a candidate failing exactly 10 % is not left undecided
    there), and production concurrency, with 8x the requests, holds the default 0.02 that a
    promotion needs. A failing candidate is Failed on far fewer requests than a pass needs.
    """
    return [
        StageSpec(
            name="acceptance",
            concurrency=4,
            gates=[
                GateSpec(name="alpha", type=GateType.ACCEPTANCE, methods=FIXED_K_METHODS),
                GateSpec(
                    name="tokens-per-step",
                    type=GateType.ACCEPTED_LENGTH,
                    methods=VARIABLE_LENGTH_METHODS,
                ),
                GateSpec(
                    name="p99-itl", type=GateType.TAIL_LATENCY, methods=METHOD_NEUTRAL_METHODS
                ),
                GateSpec(
                    name="tpot-speedup", type=GateType.SPEEDUP, methods=METHOD_NEUTRAL_METHODS
                ),
                # A gross check at low concurrency (see the docstring); 0.02 at production's.
                GateSpec(
                    name="error-rate",
                    type=GateType.ERROR_RATE,
                    max_error_rate=0.1,
                    fail_only=True,
                ),
            ],
        ),
        StageSpec(
            name="tail-latency",
            concurrency=32,
            gates=[
                GateSpec(name="p99-itl", type=GateType.TAIL_LATENCY),
                GateSpec(name="tpot-speedup", type=GateType.SPEEDUP),
                GateSpec(name="error-rate", type=GateType.ERROR_RATE),
            ],
        ),
    ]


class AnalysisSpec(KubeModel):
    """How a candidate config is judged before it reaches production."""

    traffic: TrafficSpec = section(TrafficSpec, "Shadow traffic.")
    stages: list[StageSpec] = Field(
        default_factory=default_stages,
        min_length=1,
        max_length=16,
        description="Ordered stages; defaults to acceptance then tail-latency.",
    )
    interval_seconds: int = Field(
        default=15, ge=1, le=600, description="How often gates are evaluated."
    )
    failure_limit: int = Field(
        default=0, ge=0, description="Failed evaluations tolerated per gate before rollback."
    )
    inconclusive_limit: int = Field(
        default=0,
        ge=0,
        description="Stages that may end Inconclusive before rollback (0: any rolls back).",
    )
    consecutive_error_limit: int = Field(
        default=4,
        ge=0,
        description="Metric-backend errors in a row tolerated per gate before rollback.",
    )
    progress_deadline_seconds: int = Field(
        default=1800, ge=10, description="Children must be Ready within this, or roll back."
    )
    pause_before_promotion: bool = Field(
        default=False,
        description="Wait for `specdecode.io/action: promote` after the gates pass.",
    )
    manual: bool = Field(
        default=False,
        description="Gates are not evaluated; only `specdecode.io/action` decides.",
    )
    schedule_fallback: ScheduleFallback = Field(
        default=ScheduleFallback.OFFER,
        description="When a latency gate fails after a lower-concurrency stage passed, on "
        "vLLM 0.24+, the verdict offers the candidate with a num_speculative_tokens_per_"
        "batch_size schedule that speculates only up to the concurrency that passed "
        "(status.scheduleOffer). Offer: roll back and offer it (set it as spec.speculative "
        "to have it analysed). Analyze: analyse the offer at once instead of rolling back; "
        "it is promoted only if it passes every stage.",
    )

    @model_validator(mode="after")
    def _stages_fit_traffic(self) -> AnalysisSpec:
        names = [stage.name for stage in self.stages]
        if len(names) != len(set(names)):
            raise ValueError("analysis.stages: names must be unique")
        ANALYSIS_RULES.enforce(self.to_wire())
        if self.traffic.server_side_mirror:
            return self._with_mirror_gates()
        return self

    def _with_mirror_gates(self) -> AnalysisSpec:
        """ServerSide Mirror traffic: only server-side measures exist; TailLatency reads
        vLLM's histogram.

        Why: mirrored responses go to the gateway, never to the operator, so client-side
        timings and speedup cannot be measured (ANALYSIS_RULES refuse the gates that need
        them; errors are counted by the engines). An unset itlDefinition means ServerStep
        here (the only ITL there is), so the default stages work unchanged.
        """
        stages = [
            stage.model_copy(
                update={"gates": [_server_step_by_default(gate) for gate in stage.gates]}
            )
            for stage in self.stages
        ]
        return self.model_copy(update={"stages": stages})


def _server_step_by_default(gate: GateSpec) -> GateSpec:
    if gate.type is GateType.TAIL_LATENCY and gate.itl_definition is None:
        return gate.model_copy(update={"itl_definition": ItlDefinition.SERVER_STEP})
    return gate
