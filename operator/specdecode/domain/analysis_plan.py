"""The analysis plan as the domain reads it: the stages' loads and what the engine allows.

Why not the rollout's spec: the domain imports nothing from `api` (an import-linter
contract), so `reconciler.analysis_boundary` builds this once a reconcile, in observe, and
the rules it reads there (the engine's --max-num-seqs, the release's fields) stay written
in `api`. Only what the domain reads is here: the concurrency verdict (`concurrency_verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StageLoad:
    """One stage's name and its closed-loop concurrency (None: open loop or Mirror)."""

    name: str
    concurrency: int | None


@dataclass(frozen=True)
class AnalysisPlan:
    """The stages in spec order, whether the traffic is Mirror (no concurrency of ours to
    compare), the engine's --max-num-seqs (None: not set) and whether its release has the
    per-batch-size k schedule."""

    stages: tuple[StageLoad, ...]
    mirror: bool
    max_batch: int | None
    with_schedule: bool
