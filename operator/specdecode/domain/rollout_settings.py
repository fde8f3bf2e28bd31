"""The rollout's spec as the decision reads it: strategy, analysis knobs, traffic, stages.

Why not the rollout's spec: the domain imports nothing from `api` (an import-linter
contract), so `reconciler.rollout_boundary` builds this once a reconcile, in observe, beside
the `AnalysisPlan` and the `GuardPlan`. Each stage's gates come as what the rules judge
with: their `GateParams` and the evidence kernel's answer (`api.certify`, evaluated in the
boundary) for the candidate of the stored status, the only one a look is taken of (a
candidate set in this reconcile starts its stages afresh, so none of them is measuring).
"""

from __future__ import annotations

from dataclasses import dataclass

from specdecode.domain.certification import Certification
from specdecode.domain.gate_measures import UnsentLimit
from specdecode.domain.gate_params import GateParams
from specdecode.vocabulary import PromotionStrategy, ScheduleFallback

Schedule = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class StageSettings:
    """One stage as the rules read it: its name, timings (seconds, as the spec writes
    them), concurrency (None: a requestRate stage or Mirror), gates in spec order and the
    kernel's answer for each (aligned with `gates`)."""

    name: str
    warmup_seconds: int
    min_duration_seconds: int
    max_duration_seconds: int
    concurrency: int | None
    gates: tuple[GateParams, ...]
    kernel: tuple[Certification, ...]


@dataclass(frozen=True)
class RolloutSettings:
    """The spec's share of the decision.

    `adopted`: a workloadRef rollout; `method`: the spec's speculative method as the wire
    names it (None: plain decoding); `image`, `model_name`, `served_name`, `vllm_version`:
    the engine and model in force (the resolved spec's); `kernel_schedule`: the candidate's
    per-batch-size schedule the stages' kernel answers were computed for.
    """

    strategy: PromotionStrategy
    adopted: bool
    manual: bool
    pause_before_promotion: bool
    interval_seconds: int
    failure_limit: int
    consecutive_error_limit: int
    inconclusive_limit: int
    progress_deadline_seconds: int
    schedule_fallback: ScheduleFallback
    server_side_mirror: bool
    splitter_mirror: bool
    http_route: str | None
    unsent: UnsentLimit
    method: str | None
    image: str | None
    model_name: str | None
    served_name: str | None
    vllm_version: str
    stages: tuple[StageSettings, ...]
    kernel_schedule: Schedule | None

    def certifications(self, index: int, schedule: Schedule | None) -> dict[str, Certification]:
        """The kernel's answer for each gate of stage `index`, by gate name, for a candidate
        with `schedule`: an error for another schedule than the one they were computed for
        (no look is taken of a candidate set in this reconcile)."""
        if schedule != self.kernel_schedule:
            raise ValueError("the kernel was asked about another candidate than observe's")
        stage = self.stages[index]
        return {gate.name: answer for gate, answer in zip(stage.gates, stage.kernel, strict=True)}


def schedule_key(schedule: list[list[int]] | None) -> Schedule | None:
    """A candidate's schedule as a hashable value (None: k everywhere, or no candidate)."""
    return None if schedule is None else tuple(tuple(entry) for entry in schedule)
