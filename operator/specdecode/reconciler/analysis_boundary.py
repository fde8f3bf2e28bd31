"""Where the rollout's analysis spec meets the analysis domain: the plan, built once.

Why one module: the domain imports nothing from `api` (an import-linter contract), so a
second API version changes this conversion, not the verdicts. Observe builds the plan into
the `Observations` each reconcile; the rules read here (--max-num-seqs as vLLM parses it,
the release the rollout runs and its fields) stay written in `api`.
"""

from __future__ import annotations

from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.tuning_rules import max_num_seqs
from specdecode.api.vllm_versions import field_exists
from specdecode.domain.analysis_plan import AnalysisPlan, StageLoad
from specdecode.vocabulary import SCHEDULE, TrafficSourceType


def plan_of(spec: SpecDecodeRolloutSpec) -> AnalysisPlan:
    """The spec's analysis as the domain reads it."""
    analysis = spec.analysis
    return AnalysisPlan(
        stages=tuple(StageLoad(stage.name, stage.concurrency) for stage in analysis.stages),
        mirror=analysis.traffic.source is TrafficSourceType.MIRROR,
        max_batch=max_num_seqs(spec.model.extra_args),
        with_schedule=field_exists(SCHEDULE, spec.engine.effective_vllm_version),
    )
