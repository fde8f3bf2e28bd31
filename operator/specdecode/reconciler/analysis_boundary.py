"""Where the rollout's analysis spec meets the analysis domain: the plan, built once.

Why one module: the domain imports nothing from `api` (an import-linter contract), so a
second API version changes this conversion, not the verdicts. Observe builds the plan into
the `Observations` each reconcile; the rules read here (--max-num-seqs as vLLM parses it,
the release the rollout runs and its fields) stay written in `api`.
"""

from __future__ import annotations

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api.analysis import StageSpec
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.spec_evidence import engine_digest, plan_fingerprint, spec_parts
from specdecode.api.traffic import LoadGeneratorSpec, TrafficSpec
from specdecode.api.tuning_rules import max_num_seqs
from specdecode.api.vllm_versions import field_exists
from specdecode.domain.analysis_plan import AnalysisPlan, SpecEvidence, StageLoad
from specdecode.domain.load_sizing import LoadCapacity, size_load
from specdecode.vocabulary import SCHEDULE, TrafficSourceType


def plan_of(spec: SpecDecodeRolloutSpec) -> AnalysisPlan:
    """The spec's analysis as the domain reads it."""
    analysis = spec.analysis
    return AnalysisPlan(
        stages=tuple(stage_load_of(stage, analysis.traffic) for stage in analysis.stages),
        mirror=analysis.traffic.source is TrafficSourceType.MIRROR,
        max_batch=max_num_seqs(spec.model.extra_args),
        with_schedule=field_exists(SCHEDULE, spec.engine.effective_vllm_version),
        interval_seconds=analysis.interval_seconds,
        evidence=evidence_of(spec),
        desired=setting_of(spec.speculative),
    )


def evidence_of(spec: SpecDecodeRolloutSpec) -> SpecEvidence:
    """The spec's share of the evidence, and the names of its parts' sources."""
    traffic, workload = spec.analysis.traffic, spec.workload_ref
    prompts = None
    if traffic.config_map_ref is not None:
        prompts = f"prompt ConfigMap {traffic.config_map_ref.name}"
    elif traffic.secret_ref is not None:
        prompts = f"prompt Secret {traffic.secret_ref.name}"
    return SpecEvidence(
        parts=tuple(spec_parts(spec).items()),
        plan_fingerprint=plan_fingerprint(spec),
        engine_digest=engine_digest(spec),
        source=None if workload is None else workload.name,
        prompts=prompts,
        mirror_pairing=traffic.mirror_pairing.value,
    )


def stage_load_of(stage: StageSpec, traffic: TrafficSpec) -> StageLoad:
    """One stage as the domain reads it, its load pods sized by the domain's rule."""
    capacity = capacity_of(traffic.load_generator)
    shape = size_load(capacity, stage.concurrency, stage.request_rate, traffic.max_tokens)
    durations = (stage.min_duration_seconds, stage.max_duration_seconds)
    return StageLoad(
        stage.name, stage.concurrency, stage.request_rate, *durations, stage.live_canary, shape
    )


def capacity_of(generator: LoadGeneratorSpec) -> LoadCapacity:
    """What sizing reads of the load generator, as the domain's value."""
    return LoadCapacity(
        chunks_per_second_per_process=generator.chunks_per_second_per_process,
        assumed_step_seconds=generator.assumed_step_seconds,
        max_processes_per_pod=generator.max_processes_per_pod,
        max_pods_per_side=generator.max_pods_per_side,
    )
