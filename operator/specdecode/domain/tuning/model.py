"""What a tuning decides from: the plan, as the tuning domain reads it (frozen, no wire model).

Why not the SpecDecodeTuning spec: the domain imports nothing from `api` (an import-linter
contract holds it to it), so a second API version changes one conversion
(`reconciler.tuning_boundary`), not the elimination or the report. Only what the domain
reads is here: defaults, validation and the search space's expansion stay in `api`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from specdecode.domain.gate_params import GateParams
from specdecode.domain.gates import TuningFigure


@dataclass(frozen=True)
class Limits:
    """What a config must also hold to at a load to be allowed to win there."""

    tail_ratio_at_most: float  # candidate/baseline P99 inter-chunk latency
    error_rate_at_most: float  # extra failed share of requests over the baseline's
    alpha_at_least: float | None  # draft acceptance floor (fixed-k methods); None: none


@dataclass(frozen=True)
class Pace:
    """How long a trial warms up, looks and may run, and the error its bounds may spend."""

    warmup_seconds: float
    look_seconds: float
    max_seconds: float
    tie_within: float  # relative gap that counts as a tie (trial.tolerance)
    error: float  # chance that any bound is wrong, over every cell and look


@dataclass(frozen=True)
class Candidate:
    """One config of the expanded search space, as the report and the measures name it.

    `wire` is the config exactly as vLLM's `--speculative-config` reads it (the patch the
    report recommends is built from it); `method` is its wire name, as the gates' `Look`
    reads it; `fixed_k` says the method drafts k tokens a step, so acceptance is measured.
    """

    fingerprint: str
    method: str
    k: int
    fixed_k: bool
    wire: Mapping[str, object]


@dataclass(frozen=True)
class Production:
    """Production's Deployment whose running-request histogram weights the bands."""

    deployment: str
    window_seconds: int

    def phrase(self) -> str:
        """What weighted the bands, in the report's words."""
        return (
            f"production's vllm:num_requests_running over {self.window_seconds} s "
            f"(Deployment {self.deployment})"
        )


@dataclass(frozen=True)
class TuningPlan:
    """One tuning spec as the domain reads it: what to compare, where, and how surely.

    What it may spend: `pairs_at_once` engine pairs, `gpu_seconds_budget` in all, each
    engine `gpus_per_replica` GPUs. `max_batch`: the engine's --max-num-seqs (None: not
    set); `with_schedule`: the release has a per-batch-size k schedule; `gates`: the gate
    a cell measures each figure with.
    """

    candidates: tuple[Candidate, ...]
    loads: tuple[int, ...]  # the ladder, production concurrency merged in, ascending
    objective: str
    limits: Limits
    pace: Pace
    pairs_at_once: int
    gpu_seconds_budget: float
    gpus_per_replica: int
    gates: Mapping[TuningFigure, GateParams]
    max_batch: int | None = None
    with_schedule: bool = False
    production_concurrency: int | None = None
    production: Production | None = None

    def candidate(self, fingerprint: str) -> Candidate:
        """The candidate of a cell's config; a KeyError names one not in the search space."""
        return {c.fingerprint: c for c in self.candidates}[fingerprint]
