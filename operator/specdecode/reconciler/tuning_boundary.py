"""Where the SpecDecodeTuning's wire models meet the tuning domain: spec in, status out.

Why one module: the tuning domain imports nothing from `api` (an import-linter contract),
so a second API version changes these conversions, not the elimination or the report.
In: the spec (defaults applied, search space expanded) as a `TuningPlan`, once a
reconcile. Out: the report's bounded part as the status. The rules read here (fixed-k
methods, --max-num-seqs, the release's fields, the gates' defaults) stay written in `api`.
"""

from __future__ import annotations

from specdecode.adapters.gate_boundary import gate_params
from specdecode.api.analysis import FIXED_K_METHODS
from specdecode.api.gate_spec import GateSpec
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.tuning import SpecDecodeTuningSpec
from specdecode.api.tuning_rules import max_num_seqs
from specdecode.api.tuning_status import BandWinner, SpecDecodeTuningStatus, TuningPhase
from specdecode.api.vllm_versions import field_exists
from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import TuningFigure, tuning_type
from specdecode.domain.tuning.measure import GATE_SETTINGS, MIN_BLOCKS
from specdecode.domain.tuning.model import (
    Candidate,
    Limits,
    Pace,
    Production,
    TuningPlan,
)
from specdecode.domain.tuning.report import TuningReport
from specdecode.vocabulary import SCHEDULE


def _gate(figure: TuningFigure) -> GateParams:
    """The gate a tuning measures `figure` with (the type declaring it, `tuning_figure`)."""
    gate_type = tuning_type(figure)
    wire = {"name": gate_type.value.lower(), "type": gate_type, "min_samples": MIN_BLOCKS}
    return gate_params(GateSpec.model_validate({**wire, **GATE_SETTINGS.get(figure, {})}))


TRIAL_GATES = {figure: _gate(figure) for figure in TuningFigure}


def candidate_of(config: SpeculativeConfig) -> Candidate:
    """One config of the search space as the domain names it."""
    return Candidate(
        fingerprint=config.fingerprint(),
        method=config.method.value,
        k=config.num_speculative_tokens,
        fixed_k=config.method in FIXED_K_METHODS,
        wire=config.to_wire(),
    )


def plan_of(spec: SpecDecodeTuningSpec) -> TuningPlan:
    """The spec as the tuning domain reads it."""
    trial, budget, limits = spec.trial, spec.budget, spec.constraints
    production = spec.production
    return TuningPlan(
        candidates=tuple(candidate_of(config) for config in spec.configs()),
        loads=tuple(spec.loads()),
        objective=spec.objective.value,
        limits=Limits(limits.max_tail_ratio, limits.max_error_rate, limits.min_alpha),
        pace=Pace(
            trial.warmup_seconds,
            trial.look_seconds,
            trial.max_seconds,
            trial.tolerance,
            trial.error,
        ),
        pairs_at_once=budget.max_parallel_trials,
        gpu_seconds_budget=budget.max_gpu_seconds,
        gpus_per_replica=spec.gpu_pool.gpus_per_replica,
        gates=TRIAL_GATES,
        max_batch=max_num_seqs(spec.model.extra_args),
        with_schedule=field_exists(SCHEDULE, spec.engine.effective_vllm_version),
        production_concurrency=spec.production_concurrency,
        production=(
            None
            if production is None
            else Production(production.deployment, production.window_seconds)
        ),
    )


def status_of(report: TuningReport, config_map: str | None) -> SpecDecodeTuningStatus:
    """The bounded status a tuning writes (winners, schedule, counters, the ConfigMap)."""
    winners = [
        BandWinner(
            min_concurrency=w.low,
            max_concurrency=w.high,
            config=w.config,
            speedup="" if w.objective is None else w.objective.text(),
        )
        for w in report.winners
    ]
    return SpecDecodeTuningStatus(
        phase=TuningPhase.SUCCEEDED if report.done else TuningPhase.RUNNING,
        message="every load decided or the budget spent" if report.done else "trials running",
        configs=len(report.configs),
        configs_left=len(report.configs) - len(report.dropped),
        trials_run=report.looks,
        gpu_seconds=report.gpu_seconds,
        winners=winners,
        schedule=report.schedule or [],
        report_config_map=config_map,
    )
