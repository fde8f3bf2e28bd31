"""A stage run as the domain keeps it: its gates, their looks and the look's load.

The domain's own frozen counterparts of the wire's `StageStatus`, `GateResult`,
`GateLook`, `LoadStatus` and `TrafficAcceptance` (`api.status`), field for field under
the same names, so the rules read them as they read the wire. `reconciler.observe` builds
them from the stored status and `reconciler.status_boundary` writes them back as the wire;
tests/unit/domain/test_rollout_state.py holds the two shapes equal.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from specdecode.vocabulary import (
    AcceptanceBasis,
    Evidence,
    GateType,
    GateVerdict,
    ItlDefinition,
    StagePhase,
)


class StateModel(BaseModel):
    """A part of the domain's state: a value (frozen), by field name, nothing unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Bounds(StateModel):
    """A point estimate and its confidence bounds (a look's, a gate's)."""

    value: float | None = None
    lower_bound: float | None = None
    upper_bound: float | None = None


class GateLookRecord(Bounds):
    """One evaluation of a gate (`stages[].gates[].looks[]`)."""

    measured_at: datetime
    measured_seconds: float
    verdict: GateVerdict
    samples: int | None = None
    units: int | None = None
    error: float | None = None


class GateRecord(Bounds):
    """A gate's latest measurement, its bound and its verdict (`stages[].gates[]`)."""

    name: str
    type: GateType
    verdict: GateVerdict = GateVerdict.PENDING
    reason: str = ""
    threshold: float | None = None
    samples: int | None = None
    baseline_value: float | None = None
    candidate_value: float | None = None
    server_baseline_value: float | None = None
    server_candidate_value: float | None = None
    units: int | None = None
    mean_acceptance_length: float | None = None
    stream_value: float | None = None
    acceptance_per_position: list[float] = Field(default_factory=list)
    itl_definition: ItlDefinition | None = None
    close_call: bool = False
    dry_run: bool = False
    fail_only: bool = False
    failures: int = 0
    inconclusives: int = 0
    consecutive_errors: int = 0
    measured_at: datetime | None = None
    look_count: int = 0
    looks: list[GateLookRecord] = Field(default_factory=list)


class TrafficGroupRecord(StateModel):
    """One traffic group's acceptance on the candidate (`load.acceptanceByTraffic[]`)."""

    traffic_class: str
    temperature: str
    output_length: str
    requests: int
    steps: int
    accepted_per_step: float | None = None
    alpha: float | None = None
    lower_bound: float | None = None
    upper_bound: float | None = None
    basis: AcceptanceBasis = AcceptanceBasis.STREAM


class LoadRecord(StateModel):
    """The stage run's shadow-load pods as of the last look (`stages[].load`)."""

    shards: str = ""
    requests: int = 0
    client_delay_p99_ms: float | None = None
    notes: list[str] = Field(default_factory=list)
    outcomes: list[str] = Field(default_factory=list)
    acceptance_by_traffic: list[TrafficGroupRecord] = Field(default_factory=list)


class StageRun(StateModel):
    """A stage's progress and its gates (`stages[]`)."""

    name: str
    phase: StagePhase = StagePhase.PENDING
    started_at: datetime | None = None
    measure_from: datetime | None = None
    finished_at: datetime | None = None
    message: str = ""
    inconclusive_runs: int = 0
    gates: list[GateRecord] = Field(default_factory=list)
    load: LoadRecord | None = None
    evidence: Evidence | None = None
