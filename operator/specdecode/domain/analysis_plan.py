"""The analysis plan as the domain reads it: the stages' loads, timings and what the engine allows.

Why not the rollout's spec: the domain imports nothing from `api` (an import-linter
contract), so `reconciler.analysis_boundary` builds this once a reconcile, in observe, and
the rules it reads there (the engine's --max-num-seqs, the release's fields) stay written
in `api`. Only what the domain reads is here: the concurrency verdict, the wake-ups
(`cadence`), the children and shadow load a status wants (`effects`), the evidence and the
desired config the rules compare with the status' (`spec.speculative`, as the domain's
`SpeculativeSetting`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specdecode.domain.load_sizing import LoadShape

if TYPE_CHECKING:  # the load pods import this module (`observations`) and need no pydantic
    from specdecode.domain.speculative_setting import SpeculativeSetting


@dataclass(frozen=True)
class StageLoad:
    """One stage's name, its closed-loop concurrency (None: open loop or Mirror) or open-loop
    rate, its durations, whether it runs the live canary and the load pods it is sized to."""

    name: str
    concurrency: int | None
    request_rate: float | None
    min_duration_seconds: float
    max_duration_seconds: float
    live_canary: bool
    shape: LoadShape  # `load_sizing.size_load` of the stage's load


@dataclass(frozen=True)
class SpecEvidence:
    """The spec's share of the analysis' evidence (`domain.evidence`), hashed by wire path
    in `api.spec_evidence`, and the names a message gives its parts."""

    parts: tuple[tuple[str, str], ...]  # (wire path, hash): plan, Mirror pairing, Owned engine
    plan_fingerprint: str  # the plan-only hash an operator before the parts recorded
    engine_digest: str  # an Owned shadow's label: one hash of the engine's parts
    source: str | None  # the adopted Deployment's name (workloadRef); None: Owned
    prompts: str | None  # the prompt set as a message names it; None: built-in prompts
    mirror_pairing: str  # Mirror's pairing as resolved (default included)


@dataclass(frozen=True)
class AnalysisPlan:
    """The stages in spec order, whether the traffic is Mirror (no concurrency of ours to
    compare), the engine's --max-num-seqs (None: not set), whether its release has the
    per-batch-size k schedule, the interval between looks, the spec's evidence and its
    desired config (None: plain decoding)."""

    stages: tuple[StageLoad, ...]
    mirror: bool
    max_batch: int | None
    with_schedule: bool
    interval_seconds: float
    evidence: SpecEvidence
    desired: SpeculativeSetting | None
