"""What the drift guard decides from and what it decides, as the guard reads them (no wire model).

Why not the rollout's spec and status: the guard's rules (`guarding`, `guard_findings`,
`latency_drift`) import nothing from `api` (an import-linter contract), so a second API
version changes the conversions (`reconciler.guard_boundary` for the spec,
`transitions.guard_state` for the status), not the rules. Only what the guard reads is here; what it
decides is a `GuardReaction`, which the phase step turns into the status and its Events.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from specdecode.domain.decision import Event
from specdecode.domain.gate_params import GateParams
from specdecode.vocabulary import DriftAction, DriftKind, GateType, Phase


@dataclass(frozen=True)
class GuardPlan:
    """The spec as the guard reads it: when it looks (on or off, one look every
    `interval_seconds`, in windows), how it reacts, against which gates.

    `stages`: each analysis stage's name and gates; `default_acceptance`, `default_tail`:
    the headline gates with their defaults, judged against when no stage has one;
    `desired`: the fingerprint of the spec's speculative config.
    """

    enabled: bool
    interval_seconds: float
    window_seconds: float
    on_drift: DriftAction
    latency: bool
    latency_tolerance: float
    stages: tuple[tuple[str, tuple[GateParams, ...]], ...]
    default_acceptance: GateParams
    default_tail: GateParams
    desired: str


@dataclass(frozen=True)
class GateFigure:
    """One gate's result in status as the latency half reads it: its server-side figures."""

    name: str
    type: GateType
    dry_run: bool
    server_candidate_value: float | None
    server_baseline_value: float | None


@dataclass(frozen=True)
class GuardState:
    """The status as the guard reads it. Fingerprints and names of the stable config
    (production's) and the one before it; `recorded`: the kind of the drift status holds;
    `stages`: each stage's name and gate figures, in status order."""

    phase: Phase
    phase_since: datetime | None
    plain: bool  # production runs plain decoding: no drafts to judge
    stable: str
    stable_named: str
    previous: str
    previous_named: str
    recorded: DriftKind | None
    reanalysed: str | None
    stages: tuple[tuple[str, tuple[GateFigure, ...]], ...]


@dataclass(frozen=True)
class Drift:
    """A drift as status records it: what every half records and the half's own figures
    (by the status' field names)."""

    kind: DriftKind
    detected_at: datetime
    window_start: datetime
    window_seconds: float
    blocks: int
    message: str
    figures: tuple[tuple[str, float | int], ...]

    def fields(self) -> dict[str, object]:
        """The drift by the status' field names (its `drift`), figures included."""
        common = (
            ("kind", self.kind),
            ("detected_at", self.detected_at),
            ("window_start", self.window_start),
            ("window_seconds", self.window_seconds),
            ("blocks", self.blocks),
            ("message", self.message),
        )
        return dict((*common, *self.figures))


class Reaction(StrEnum):
    """What the guard does to the status this reconcile."""

    KEEP = "Keep"  # nothing changes
    FORGET = "Forget"  # the recorded drift is cleared (`events` say why)
    RECORD = "Record"  # `drift` is recorded (`events`: the warning)
    ROLL_BACK = "RollBack"  # production returns to the previous config, `drift` recorded
    FALL_BACK = "FallBack"  # plain decoding for good (drifted again after its re-analysis)
    REANALYZE = "Reanalyze"  # plain decoding while the promoted config is analysed again


@dataclass(frozen=True)
class GuardReaction:
    """The guard's decision: the reaction, its drift, its message (the transition's, or
    the re-analysis'), its Events and, re-analysing, whether the promoted config is an
    offer in place of the spec's own."""

    reaction: Reaction = Reaction.KEEP
    drift: Drift | None = None
    message: str = ""
    events: tuple[Event, ...] = ()
    offer: bool = False
