"""The contract every shadow-traffic source meets (prompt replay now; mirroring next).

One Protocol, as Flagger has one router interface: the reconciler starts and stops a
source and reads its measurements without knowing where the requests come from.
"""

from __future__ import annotations

from typing import Protocol

from specdecode.domain.observations import LatencySamples


class ShadowTraffic(Protocol):
    """Identical requests to baseline and candidate, measured on both."""

    async def run(self) -> None:
        """Drive load until cancelled or the stage's cost cap is reached.

        Runs as a background task owned by the TrafficManager, never inside a handler, so
        a reconcile never waits on engine latency.
        """
        ...

    def snapshot(self, since: float, now: float) -> tuple[LatencySamples, LatencySamples]:
        """(baseline, candidate) samples of requests started at or after `since`.

        Why both at once: the tail-latency gate compares the two on the same requests at
        the same concurrency, so they must come from the same window.
        """
        ...

    @property
    def error(self) -> str | None:
        """Why the source cannot run (e.g. its prompt set is invalid), or None."""
        ...
