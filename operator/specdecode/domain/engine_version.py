"""The running engines' vLLM release against the one the rollout was validated for.

The operator accepts a speculative config for one vLLM release (spec.engine.vllmVersion,
else the image tag, else the pin). If an engine answers GET /version with another
release, the config's fields may mean something else or nothing (0.11-0.15 drop unknown
keys silently), so the rollout reports Degraded, naming both releases and the pod. The
phase is left alone: the gates still measure what runs; people decide what to fix.
Pure and wire-free: it says the mismatch; `pass_decision` lays it over the status.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def version_mismatch(expected: str, running: list[RunningVersion]) -> str | None:
    """Degraded's message (reason VllmVersionMismatch) while an engine runs another release
    than `expected`; None while every engine runs it."""
    wrong = mismatches(expected, running)
    return mismatch_message(expected, wrong) if wrong else None
