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
    """A part of the domain's state: a value (frozen), by field name, nothing unknown; its
    fields in no order of meaning (converted by name; the wire keeps the written order)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class GateLookRecord(StateModel):
    """One evaluation of a gate (`stages[].gates[].looks[]`)."""

    measured_at: datetime
    measured_seconds: float
    value: float | None = None
    lower_bound: float | None = None
    verdict: GateVerdict
    upper_bound: float | None = None
    samples: int | None = None
    units: int | None = None
    error: float | None = None


class GateRecord(StateModel):
    """A gate's latest measurement, its bound and its verdict (`stages[].gates[]`)."""

    name: str
    type: GateType
    verdict: GateVerdict = GateVerdict.PENDING
    reason: str = ""
    value: float | None = None
    lower_bound: float | None = None
    upper_bound: float | None = None
    threshold: float | None = None
    samples: int | None = None
    failures: int = 0
    units: int | None = None
    inconclusives: int = 0
    consecutive_errors: int = 0
    baseline_value: float | None = None
    candidate_value: float | None = None
    close_call: bool = False
    server_baseline_value: float | None = None
    server_candidate_value: float | None = None
    dry_run: bool = False
    mean_acceptance_length: float | None = None
    stream_value: float | None = None
    acceptance_per_position: list[float] = Field(default_factory=list)
    itl_definition: ItlDefinition | None = None
    fail_only: bool = False
    measured_at: datetime | None = None
    look_count: int = 0
    looks: list[GateLookRecord] = Field(default_factory=list)


class TrafficGroupRecord(StateModel):
    """One traffic group's acceptance on the candidate (`load.acceptanceByTraffic[]`)."""

    traffic_class: str
    temperature: str
    output_length: str
    alpha: float | None = None
    lower_bound: float | None = None
    basis: AcceptanceBasis = AcceptanceBasis.STREAM
    requests: int
    steps: int
    accepted_per_step: float | None = None
    upper_bound: float | None = None


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
