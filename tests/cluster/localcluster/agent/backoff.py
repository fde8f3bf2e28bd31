"""Kubelet-like crash-loop back-off: restart at once after the first exit, then 10 s, 20 s,
40 s ... capped at 300 s; a container that ran for 10 minutes starts over.

`SPECDECODE_AGENT_BACKOFF_SCALE` (a float, default 1) shrinks every interval for tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

INITIAL_SECONDS = 10.0
MAX_SECONDS = 300.0
RESET_AFTER_SECONDS = 600.0
SCALE_ENV = "SPECDECODE_AGENT_BACKOFF_SCALE"


def scale_from_env(environ: dict[str, str] | None = None) -> float:
    """Read the test scale factor; a bad value is an error, not silently 1."""
    raw = (environ if environ is not None else dict(os.environ)).get(SCALE_ENV, "1")
    scale = float(raw)
    if scale <= 0:
        raise ValueError(f"{SCALE_ENV} must be positive, got {raw!r}")
    return scale


@dataclass(frozen=True)
class BackoffPolicy:
    """The schedule, scaled."""

    scale: float = 1.0

    def delay_before_restart(self, consecutive_failures: int) -> float:
        """Seconds to wait before restart number `consecutive_failures` (1-based)."""
        if consecutive_failures <= 1:
            return 0.0
        raw = INITIAL_SECONDS * 2 ** (consecutive_failures - 2)
        return float(min(raw, MAX_SECONDS) * self.scale)

    def resets_after(self, run_seconds: float) -> bool:
        """True if a run this long means the container is healthy again."""
        return run_seconds >= RESET_AFTER_SECONDS * self.scale
