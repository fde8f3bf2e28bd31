"""Building blocks of a transition: a `Step` (new status plus events) and phase changes.

Every phase change goes through `enter`, so each one sets `phase_since`, `reason` and
`message` the same way and emits exactly one Event. Rollbacks and failures are Warnings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

from specdecode.domain.decision import Event, EventType
from specdecode.domain.guard_model import GateFigure, GuardState
from specdecode.domain.load_status import LoadLook
from specdecode.domain.rollout_settings import RolloutSettings
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.speculative_setting import SpeculativeSetting
from specdecode.domain.stage_state import GateRecord
from specdecode.domain.stages import fresh_stages
from specdecode.speculative_document import fingerprint_of
from specdecode.vocabulary import Phase

# The status of a phase with no stage running: what every transition out of a stage writes,
# so a field that names the running stage is cleared everywhere or nowhere.
NO_STAGE_RUNNING: Mapping[str, Any] = MappingProxyType(
    {"current_stage": None, "current_stage_index": None}
)

# Phases in which an analysis (shadows, stages) is under way.
ANALYSIS_PHASES = frozenset({Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED})


@dataclass(frozen=True)
class Step:
    """The outcome of one part of a reconcile: the status so far and the events it caused."""

    status: RolloutState
    events: tuple[Event, ...] = ()
    clear_action: bool = False
    load: LoadLook | None = None  # a stage look's load, for the status written (apply)

    def then(self, later: Step) -> Step:
        """This step followed by `later` (whose status already builds on this one's)."""
        return Step(
            status=later.status,
            events=self.events + later.events,
            clear_action=self.clear_action or later.clear_action,
            load=self.load if later.load is None else later.load,
        )

    def with_status(self, status: RolloutState) -> Step:
        """The same events with an updated status (no transition)."""
        return Step(status, self.events, self.clear_action, self.load)


def enter(
    status: RolloutState,
    phase: Phase,
    now: datetime,
    reason: str,
    message: str,
    warning: bool = False,
    **changes: Any,
) -> Step:
    """Move to `phase` now, record why, and emit one Event."""
    update: dict[str, Any] = {
        "phase": phase,
        "phase_since": now,
        "reason": reason,
        "message": message,
        **changes,
    }
    event_type = EventType.WARNING if warning else EventType.NORMAL
    return Step(status.model_copy(update=update), (Event(reason, message, event_type),))


def roll_back(status: RolloutState, now: datetime, reason: str, message: str) -> Step:
    """End the analysis: production keeps (or returns to) the stable config; say why. A
    schedule offer that was itself the candidate is offered no more."""
    offer = status.schedule_offer
    if offer is not None and offer.fingerprint() == status.candidate_fingerprint:
        status = status.model_copy(update={"schedule_offer": None})
    return enter(
        status,
        Phase.ROLLED_BACK,
        now,
        reason,
        message,
        warning=True,
        verdict=Phase.ROLLED_BACK.value,
        **NO_STAGE_RUNNING,
    )


def start_analysis(
    settings: RolloutSettings,
    desired: SpeculativeSetting | None,
    status: RolloutState,
    now: datetime,
    reason: str,
    message: str,
    offer: SpeculativeSetting | None = None,
) -> Step:
    """A clean analysis of the desired config (the plan's), or of its schedule `offer` in its place
    (`analysis.scheduleFallback: Analyze`; `analysedFor` then names the desired config, so
    the spec is not taken for changed): shadows deploying, every stage Pending. A restart of
    the same desired config while its offer is analysed keeps analysing the offer."""
    offer = offer or offer_in_analysis(desired, status)
    candidate = desired if offer is None else offer
    return enter(
        status,
        Phase.DEPLOYING,
        now,
        reason,
        message,
        warning=offer is not None,  # a gate failed on the desired config
        candidate_speculative=candidate,
        candidate_fingerprint=fingerprint_of(candidate),
        analysed_for=None if offer is None else fingerprint_of(desired),
        schedule_offer=offer,
        stable_fingerprint=fingerprint_of(status.stable_speculative),
        analysis_started_at=now,
        analysis_fingerprint=None,  # recorded at the end of the reconcile (`machine`)
        evidence=None,
        stages=fresh_stages(settings.stages),
        **NO_STAGE_RUNNING,
        verdict=None,
        alpha=None,
        itl_ratio=None,
        drift=None,
        reanalysed=None,
    )


def offer_in_analysis(
    desired: SpeculativeSetting | None, status: RolloutState
) -> SpeculativeSetting | None:
    """The schedule offer under analysis in place of the desired config, if any."""
    offer = status.schedule_offer
    if offer is None or status.analysed_for != fingerprint_of(desired):
        return None
    return offer if offer.fingerprint() == status.candidate_fingerprint else None


def promoted(status: RolloutState, now: datetime, reason: str, message: str) -> Step:
    """Production runs the candidate: it becomes the stable config."""
    return enter(
        status,
        Phase.PROMOTED,
        now,
        reason,
        message,
        stable_speculative=status.candidate_speculative,
        stable_fingerprint=status.candidate_fingerprint,
        previous_stable_speculative=status.stable_speculative,
        schedule_offer=None,
        drift=None,
        verdict=Phase.PROMOTED.value,
        **NO_STAGE_RUNNING,
    )


def describe(config: SpeculativeSetting | None) -> str:
    """A short human name for a config, for messages."""
    if config is None:
        return "plain decoding"
    return f"{config.method.value} k={config.num_speculative_tokens} ({config.fingerprint()})"


def notify(status: RolloutState, reason: str, message: str, warning: bool = False) -> Step:
    """Record and announce something that happened within the current phase."""
    event_type = EventType.WARNING if warning else EventType.NORMAL
    updated = status.model_copy(update={"reason": reason, "message": message})
    return Step(updated, (Event(reason, message, event_type),))


def analyse_desired_unless_stable(
    settings: RolloutSettings,
    desired: SpeculativeSetting | None,
    status: RolloutState,
    now: datetime,
    reason: str,
    message: str,
) -> Step:
    """Work toward the desired config (the plan's): nothing to analyse if it is the stable
    one (e.g. Git reverted), else a clean analysis."""
    desired_fp = fingerprint_of(desired)
    if desired_fp == fingerprint_of(status.stable_speculative):
        text = f"desired config {describe(desired)} is the stable config; nothing to analyse"
        return enter(
            status,
            Phase.PROMOTED,
            now,
            "UpToDate",
            text,
            candidate_speculative=desired,
            candidate_fingerprint=desired_fp,
            stable_fingerprint=desired_fp,
            analysed_for=None,
            schedule_offer=None,
            stages=[],
            **NO_STAGE_RUNNING,
            verdict=None,
            drift=None,
        )
    return start_analysis(settings, desired, status, now, reason, message)


def guard_state(status: RolloutState) -> GuardState:
    """The status as the drift guard reads it (`domain.guard_model`)."""
    stable, previous = status.stable_speculative, status.previous_stable_speculative
    return GuardState(
        phase=status.phase,
        phase_since=status.phase_since,
        plain=stable is None,
        stable=fingerprint_of(stable),
        stable_named=describe(stable),
        previous=fingerprint_of(previous),
        previous_named=describe(previous),
        recorded=None if status.drift is None else status.drift.kind,
        reanalysed=status.reanalysed,
        stages=tuple(
            (stage.name, tuple(_figure(result) for result in stage.gates))
            for stage in status.stages
        ),
    )


def _figure(result: GateRecord) -> GateFigure:
    return GateFigure(
        result.name,
        result.type,
        result.dry_run,
        result.server_candidate_value,
        result.server_baseline_value,
    )
