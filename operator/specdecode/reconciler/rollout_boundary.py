"""Where the rollout's resolved spec meets the decision: the spec in, as `RolloutSettings`.

Why one module: the decision's rules (`domain.machine` and the phases it steps through)
import nothing from `api` (an import-linter contract), so a second API version changes
this conversion, not the rules. Built once a reconcile (observe) onto the `Observations`;
the stages' gates are converted and the kernel evaluated for the stored status' candidate
in `adapters.gate_boundary`. Pure conversion: no rule is decided here.
"""

from __future__ import annotations

from specdecode.adapters.gate_boundary import gate_params, kernel_of
from specdecode.api.analysis import StageSpec
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.traffic import TrafficSpec
from specdecode.domain.certification import Certification
from specdecode.domain.gate_measures import LOAD_CLIENT_LIMIT, UnsentLimit
from specdecode.domain.rollout_settings import RolloutSettings, StageSettings, schedule_key
from specdecode.domain.speculative_setting import SpeculativeSetting


def settings_of(
    spec: SpecDecodeRolloutSpec, candidate: SpeculativeSetting | None = None
) -> RolloutSettings:
    """The spec as the decision reads it; the kernel answered for `candidate` (the stored
    status' config under analysis)."""
    analysis, traffic, engine = spec.analysis, spec.analysis.traffic, spec.engine
    stages = tuple(
        stage_settings_of(stage, kernel_of(spec, index, candidate))
        for index, stage in enumerate(analysis.stages)
    )
    return RolloutSettings(
        strategy=spec.strategy,
        adopted=spec.workload_ref is not None,
        manual=analysis.manual,
        pause_before_promotion=analysis.pause_before_promotion,
        interval_seconds=analysis.interval_seconds,
        failure_limit=analysis.failure_limit,
        consecutive_error_limit=analysis.consecutive_error_limit,
        inconclusive_limit=analysis.inconclusive_limit,
        progress_deadline_seconds=analysis.progress_deadline_seconds,
        schedule_fallback=analysis.schedule_fallback,
        server_side_mirror=traffic.server_side_mirror,
        splitter_mirror=traffic.splitter_mirror,
        http_route=traffic.http_route,
        unsent=unsent_limit(traffic),
        method=spec.speculative.method if spec.speculative is not None else None,
        image=engine.image,
        model_name=spec.model.name,
        served_name=spec.model.served_name,
        vllm_version=engine.effective_vllm_version,
        stages=stages,
        kernel_schedule=None if candidate is None else schedule_key(candidate.schedule),
    )


def stage_settings_of(stage: StageSpec, kernel: tuple[Certification, ...]) -> StageSettings:
    """One stage as the rules read it, with the kernel's answer for each of its gates."""
    durations = (stage.warmup_seconds, stage.min_duration_seconds, stage.max_duration_seconds)
    gates = tuple(gate_params(gate) for gate in stage.gates)
    return StageSettings(stage.name, *durations, stage.concurrency, gates, kernel)


def unsent_limit(traffic: TrafficSpec) -> UnsentLimit:
    """How much of its offered load a side may miss: the splitter's shed share under
    Mirror traffic (its settings), else the open-loop load clients' fixed share."""
    if not traffic.splitter_mirror:
        return LOAD_CLIENT_LIMIT
    splitter = traffic.splitter_settings
    return UnsentLimit(splitter.max_shed_fraction, splitter.max_in_flight)
