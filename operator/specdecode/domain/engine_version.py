"""The running engines' vLLM release against the one the rollout was validated for.

The operator accepts a speculative config for one vLLM release (spec.engine.vllmVersion,
else the image tag, else the pin). If an engine answers GET /version with another
release, the config's fields may mean something else or nothing (0.11-0.15 drop unknown
keys silently), so the rollout reports Degraded, naming both releases and the pod. The
phase is left alone: the gates still measure what runs; people decide what to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.degraded import with_degraded

VERSION_MISMATCH = "VllmVersionMismatch"


@dataclass(frozen=True)
class RunningVersion:
    """What one engine pod's GET /version answered."""

    pod: str
    version: str


def mismatches(expected: str, running: list[RunningVersion]) -> list[RunningVersion]:
    """The engines that run another release than `expected`, by pod name."""
    return sorted((r for r in running if r.version != expected), key=lambda r: r.pod)


def mismatch_message(expected: str, wrong: list[RunningVersion]) -> str:
    """One line naming both releases and the pods."""
    found = ", ".join(f"{r.pod} runs vLLM {r.version}" for r in wrong)
    return (
        f"{found}; the rollout's speculative config was validated for vLLM {expected} "
        "(spec.engine.vllmVersion, else the image tag, else the pinned release)"
    )


def with_version_check(
    old: SpecDecodeRolloutStatus,
    new: SpecDecodeRolloutStatus,
    expected: str,
    running: list[RunningVersion],
    now: datetime,
) -> SpecDecodeRolloutStatus:
    """`new` with Degraded=True (reason VllmVersionMismatch) while an engine runs another
    release, unless Degraded is already True for a reason of the phase.

    The transition time is kept from `old` while the mismatch lasts, so the condition does
    not flap on every reconcile.
    """
    wrong = mismatches(expected, running)
    if not wrong:
        return new
    return with_degraded(old, new, VERSION_MISMATCH, mismatch_message(expected, wrong), now)
