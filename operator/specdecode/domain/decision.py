"""What `decide` returns: the next status and the effects that make the world match it.

Effects are declarative ("the candidate Deployment should exist with config X"), so
applying them twice is harmless and a restarted operator converges to the same place.
Handlers apply them through adapters; the domain never performs I/O itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from specdecode.domain.load_sizing import LoadShape
from specdecode.domain.load_status import LoadLook
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.speculative_setting import SpeculativeSetting


class EventType(StrEnum):
    """Kubernetes Event types."""

    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to emit on the rollout (one per transition)."""

    reason: str
    message: str
    type: EventType = EventType.NORMAL


@dataclass(frozen=True)
class DesiredChildren:
    """Which engine Deployments should exist, and with which speculative config.

    `production` is always present (the stable config, None = plain decoding). Baseline and
    candidate exist only while an analysis runs; `live_canary` lets candidate pods join the
    production Service.
    """

    production: SpeculativeSetting | None
    shadows: bool = False
    baseline: SpeculativeSetting | None = None
    candidate: SpeculativeSetting | None = None
    live_canary: bool = False


ONE_PROCESS_PER_SIDE = LoadShape(pods_per_side=1, processes_per_pod=1)


@dataclass(frozen=True)
class TrafficPlan:
    """Shadow load that should be running now (None in `Decision.traffic` = none).

    `started_at` tells a re-run of a stage from the run before it (fresh load pods, fresh
    results); `shape` is how many load pods and processes each side gets.
    """

    stage_name: str
    candidate_fingerprint: str
    concurrency: int | None
    request_rate: float | None
    started_at: datetime | None = None
    shape: LoadShape = ONE_PROCESS_PER_SIDE


@dataclass(frozen=True)
class Decision:
    """The verdict of one reconcile. `status` is what is written but for the running stage's
    `load`, which travels as `stage_load` and `apply` lays on (`reconciler/stage_load.py`)."""

    status: RolloutState
    children: DesiredChildren
    traffic: TrafficPlan | None = None
    events: tuple[Event, ...] = ()
    clear_action: bool = False  # the specdecode.io/action annotation was acted on
    # When time alone next changes the decision (`cadence.next_timed_event`); None: unknown.
    wake_at: datetime | None = None
    # The load of this pass's stage look, which the status written carries (`apply`).
    stage_load: LoadLook | None = None

    def with_status(self, status: RolloutState) -> Decision:
        """This decision with `status` (itself when `status` is its own: the checks laid
        over a decision change nothing most of the time)."""
        return self if status is self.status else replace(self, status=status)
