"""Where time comes from: injected, so tests can run the operator on a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """A source of the current time."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC (status timestamps are compared to it)."""
        ...


class SystemClock:
    """The wall clock, truncated to whole seconds as Kubernetes timestamps are."""

    def now(self) -> datetime:
        """Now, in UTC, without microseconds (they would not survive a round trip)."""
        return datetime.now(UTC).replace(microsecond=0)
