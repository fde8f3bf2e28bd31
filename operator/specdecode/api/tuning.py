"""The SpecDecodeTuning resource: find the best speculative config for a traffic, per load.

A rollout says yes or no to one config; a tuning searches a space of them across a
concurrency ladder and reports the winner per load band, break-evens and a k schedule. It
reuses the rollout's models, so what it measures is what a rollout would run.
More: docs/internals.md.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, model_validator

from specdecode.api.base import KubeModel, optional, section
from specdecode.api.gate_spec import GATE_DEFAULTS
from specdecode.api.rollout import (
    SPEC_RULES,
    SpecDecodeObject,
    SpecDecodeRolloutSpec,
)
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.speculative_rules import SCHEDULE
from specdecode.api.traffic import TrafficSpec
from specdecode.api.tuning_production import ProductionSpec
from specdecode.api.tuning_rules import (
    BUDGET_MESSAGE,
    SPEC_RULES_TUNING,
    TRIAL_RULES,
    budget_pays_one_look,
    max_num_seqs,
)
from specdecode.api.tuning_space import MAX_EXPANDED, SearchGrid, SearchSpace, raise_problems
from specdecode.api.tuning_status import SpecDecodeTuningStatus
from specdecode.api.workload import EngineSpec, GpuPoolSpec, ModelSpec

KIND = "SpecDecodeTuning"
PLURAL = "specdecodetunings"
SINGULAR = "specdecodetuning"
SHORT_NAMES = ("sdt",)

MAX_LADDER = 12
DEFAULT_LADDER = (1, 4, 16, 64)
Concurrency = Annotated[int, Field(ge=1, le=4096)]


class Objective(StrEnum):
    """What "best" means at one load."""

    MINIMISE_TPOT = "MinimiseTPOT"  # median time per output token (latency users feel)
    MAXIMISE_THROUGHPUT = "MaximiseThroughput"  # output tokens per second of the engine


class TrialSpec(KubeModel):
    """How one trial (one config at one concurrency, beside a baseline) is run and looked at."""

    warmup_seconds: int = Field(default=30, ge=0, le=3600, description="Load before measuring.")
    look_seconds: int = Field(
        default=60, ge=10, le=3600, description="Measured seconds between two looks."
    )
    max_seconds: int = Field(
        default=600,
        ge=10,
        le=86400,
        description="Most measured seconds per trial; an exhaustive sweep runs every trial "
        "this long.",
    )
    tolerance: float = Field(
        default=0.05,
        ge=0,
        le=0.5,
        description="Speedups closer than this (relative) count as a tie: a trial stops "
        "once the leader is known to within it.",
    )
    error: float = Field(
        default=0.05,
        gt=0,
        le=0.5,
        description="Chance that any reported bound is wrong, spent over every trial and look.",
    )

    @model_validator(mode="after")
    def _look_fits(self) -> TrialSpec:
        raise_problems(TRIAL_RULES.violations(self.to_wire()))
        return self


class Constraints(KubeModel):
    """What a config must also satisfy at a load to be allowed to win there."""

    # The gates' defaults, so a tuning recommends what a default rollout would promote.
    max_tail_ratio: float = Field(
        default=1.0 + float(GATE_DEFAULTS["tolerance"]),  # type: ignore[arg-type]
        gt=0,
        description="Most candidate/baseline P99 inter-chunk latency (default: 1 + the "
        "TailLatency gate's default tolerance).",
    )
    min_alpha: float | None = optional("Draft acceptance floor (fixed-k methods).", ge=0, le=1)
    max_error_rate: float = Field(
        default=float(GATE_DEFAULTS["max_error_rate"]),  # type: ignore[arg-type]
        ge=0,
        le=1,
        description="Most extra failed share of requests allowed over the baseline's (default: "
        "the ErrorRate gate's).",
    )


class Budget(KubeModel):
    """What the tuning may spend."""

    max_parallel_trials: int = Field(
        default=2, ge=1, le=64, description="Trials (engine pairs) running at once."
    )
    max_gpu_seconds: int = Field(
        default=200_000,
        ge=1,
        description="GPU-seconds for all trials (2 engines x gpusPerReplica x seconds each).",
    )


class SpecDecodeTuningSpec(KubeModel):
    """The model, where it runs, the traffic, and the search space to tune over."""

    model: ModelSpec = Field(description="The target model.")
    gpu_pool: GpuPoolSpec = section(GpuPoolSpec, "GPU nodes and GPUs per replica.")
    engine: EngineSpec = Field(description="Engine image; its vLLM release checks candidates.")
    traffic: TrafficSpec = section(TrafficSpec, "Shadow traffic (Prompts source).")
    search_space: SearchSpace = Field(description="Configs to compare.")
    concurrency_ladder: list[Concurrency] = Field(
        default_factory=lambda: list(DEFAULT_LADDER),
        min_length=1,
        max_length=MAX_LADDER,
        description="Requests in flight per engine, strictly ascending.",
    )
    production_concurrency: Concurrency | None = optional(
        "Production's usual concurrency; added to the ladder, and all the weight "
        "when production's running-request histogram is not known."
    )
    production: ProductionSpec | None = optional(
        "Production's Deployment: its running-request histogram weights the "
        "loads for the one config to roll out (else productionConcurrency, else equal)."
    )
    objective: Objective = Field(default=Objective.MINIMISE_TPOT, description="What wins.")
    constraints: Constraints = section(Constraints, "Must-holds.")
    trial: TrialSpec = section(TrialSpec, "Trial length and error.")
    budget: Budget = section(Budget, "Parallelism and GPU-seconds.")
    apply: bool = Field(
        default=False,
        description="Start a gated SpecDecodeRollout with the winner when done (default: "
        "only report the ready-to-apply patch).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SpecDecodeTuningSpec:
        problems = SPEC_RULES_TUNING.violations(self.to_wire())
        problems += _search_space_problems(self)
        if not budget_pays_one_look(
            self.gpu_pool.gpus_per_replica,
            self.trial.warmup_seconds,
            self.trial.look_seconds,
            self.budget.max_gpu_seconds,
        ):
            problems.append(BUDGET_MESSAGE)
        limit = max_num_seqs(self.model.extra_args)
        if limit is not None and max(self.loads()) > limit:
            problems.append(
                f"concurrencyLadder: {max(self.loads())} exceeds --max-num-seqs {limit}"
            )
        raise_problems(problems)
        return self

    def loads(self) -> list[int]:
        """The ladder with the production concurrency merged in, ascending."""
        extra = [] if self.production_concurrency is None else [self.production_concurrency]
        return sorted({*self.concurrency_ladder, *extra})

    def configs(self) -> list[SpeculativeConfig]:
        """The expanded search space."""
        return self.search_space.expanded()

    def rollout_wire(self, config: SpeculativeConfig | None) -> dict[str, object]:
        """A SpecDecodeRollout spec (wire form) that would run `config` on this model."""
        wire: dict[str, object] = {
            "model": self.model.to_wire(),
            "gpuPool": self.gpu_pool.to_wire(),
            "engine": self.engine.to_wire(),
        }
        if config is not None:
            wire["speculative"] = config.to_wire()
        return wire

    def trial_spec(self, config: SpeculativeConfig) -> SpecDecodeRolloutSpec:
        """The rollout spec one trial's engines and load pods are rendered from."""
        wire = {**self.rollout_wire(config), "analysis": {"traffic": self.traffic.to_wire()}}
        return SpecDecodeRolloutSpec.model_validate(wire)


def _search_space_problems(spec: SpecDecodeTuningSpec) -> list[str]:
    """Checks the API server cannot make: they need the grids expanded."""
    try:
        configs = spec.configs()
    except ValueError as error:
        return [f"searchSpace.grids: {error}"]
    problems = []
    if len(configs) > MAX_EXPANDED:
        problems.append(f"searchSpace: {len(configs)} configs; at most {MAX_EXPANDED}")
    seen: set[str] = set()
    for config in configs:
        if config.fingerprint() in seen:
            problems.append(f"searchSpace: duplicate config {config.to_cli_json()}")
        seen.add(config.fingerprint())
        if config.num_speculative_tokens_per_batch_size is not None:
            problems.append(f"searchSpace: {SCHEDULE} is derived by the tuning, not searched")
    for grid in spec.search_space.grids:  # candidates: SPEC_RULES_TUNING, as the server does
        for config in grid.expand():
            name = f"{config.method.value} k={config.num_speculative_tokens}"
            for problem in SPEC_RULES.violations(spec.rollout_wire(config)):
                problems.append(f"searchSpace.grids {name}: {problem}")
    return problems


class SpecDecodeTuning(SpecDecodeObject):
    """The resource as a whole, for code that reads objects from the API server."""

    kind: str = Field(default=KIND)
    spec: SpecDecodeTuningSpec
    status: SpecDecodeTuningStatus = Field(default_factory=SpecDecodeTuningStatus)


__all__ = [
    "Budget",
    "Constraints",
    "Objective",
    "ProductionSpec",
    "SearchGrid",
    "SearchSpace",
    "SpecDecodeTuning",
    "SpecDecodeTuningSpec",
    "TrialSpec",
]
