"""The rollout's state as the domain reads and decides it: its own type, not the wire's.

`RolloutState` and its parts are frozen counterparts of `SpecDecodeRolloutStatus` and
its parts (`api.status`), field for field under the same names, so the rules read and
`model_copy(update=...)` them as before; the stage runs live in `domain.stage_state`.
`reconciler.observe` builds the state from the stored status once and
`reconciler.status_boundary` turns the decided state back into the wire once;
tests/unit/domain/test_rollout_state.py holds the two shapes equal. The speculative
configs it holds are the domain's `SpeculativeSetting` (`CONFIG_FIELDS`), which the two
boundaries convert one by one (`adapters.speculative_boundary`).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from specdecode.domain.speculative_setting import SpeculativeSetting
from specdecode.domain.stage_state import StageRun, StateModel
from specdecode.vocabulary import ConditionStatus, DriftKind, Phase

# The fields holding a speculative config: the wire's on one side, the domain's on the other.
CONFIG_FIELDS = (
    "stable_speculative",
    "candidate_speculative",
    "previous_stable_speculative",
    "schedule_offer",
)


class ConditionRecord(StateModel):
    """A metav1.Condition (`conditions[]`)."""

    type: str
    status: ConditionStatus
    reason: str
    message: str = ""
    last_transition_time: datetime
    observed_generation: int | None = None


class MirrorRecord(StateModel):
    """Mirror traffic through the splitter: where the live copies go (`mirror`)."""

    splitter_service: str
    http_route: str | None = None


class DriftRecord(StateModel):
    """The look that found production drifting (`drift`)."""

    detected_at: datetime
    lower_bound: float
    upper_bound: float
    threshold: float
    kind: DriftKind = DriftKind.ACCEPTANCE
    window_start: datetime
    window_seconds: float
    blocks: int
    alpha: float | None = None
    draft_tokens: int | None = None
    message: str = ""
    tail_share: float | None = None
    edge_seconds: float | None = None
    reference_seconds: float | None = None
    observations: int | None = None


class WorkloadRecord(StateModel):
    """What the operator read from a `workloadRef` source and asks its owner (`workload`)."""

    image: str | None = None
    model: str | None = None
    served_model_name: str | None = None
    source: str
    vllm_version: str | None = None
    template_hash: str | None = None
    dropped_labels: list[str] = Field(default_factory=list)
    owner_patch: str | None = None
    verified_at: datetime | None = None


class FindingsRecord(StateModel):
    """What the last apply found in its way (`applyFindings`)."""

    not_owned_children: list[str] = Field(default_factory=list)
    not_owned_load_token: str | None = None
    not_owned_promotion_files: str | None = None
    patch_refused: str | None = None
    patch_refused_generation: int | None = None

    def not_owned(self) -> tuple[str, ...]:
        """Every not-owned finding, one message each (what Degraded ChildNotOwned names)."""
        singles = (self.not_owned_load_token, self.not_owned_promotion_files)
        return (*self.not_owned_children, *(found for found in singles if found))

    def is_empty(self) -> bool:
        """Nothing found: the field is left out of status."""
        return not self.not_owned() and self.patch_refused is None


class RolloutState(StateModel):
    """What is true of a rollout now: the status the domain reads and decides."""

    observed_generation: int | None = None
    reason: str | None = None
    stable_speculative: SpeculativeSetting | None = None
    stable_fingerprint: str | None = None
    candidate_speculative: SpeculativeSetting | None = None
    phase: Phase = Phase.PENDING
    candidate_fingerprint: str | None = None
    phase_since: datetime | None = None
    analysis_started_at: datetime | None = None
    analysis_fingerprint: str | None = None
    message: str = ""
    evidence: list[str] | None = None
    current_stage: str | None = None
    current_stage_index: int | None = None
    verdict: str | None = None
    alpha: str | None = None
    stages: list[StageRun] = Field(default_factory=list)
    itl_ratio: str | None = None
    previous_stable_speculative: SpeculativeSetting | None = None
    drift: DriftRecord | None = None
    schedule_offer: SpeculativeSetting | None = None
    conditions: list[ConditionRecord] = Field(default_factory=list)
    analysed_for: str | None = None
    reanalysed: str | None = None
    workload: WorkloadRecord | None = None
    mirror: MirrorRecord | None = None
    apply_findings: FindingsRecord | None = None
