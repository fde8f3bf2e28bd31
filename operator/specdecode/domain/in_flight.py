"""Requests in flight at a block's end: evidence a hung request gives before it ends.

Why: a request that stops streaming ends only at the load pod's timeout, or never if the
pod stops first; until then it is in no block. So each block carries a bounded snapshot of
its open requests (`MAX_OPEN` longest open gaps with their ages); `open_requests` judges it.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Open requests a snapshot lists (the longest open gaps): more than any gate's tail needs
# from one look (each counts one chunk gap of the window's thousands), few enough to send.
MAX_OPEN = 64


@dataclass(frozen=True)
class OpenRequest:
    """One request in flight at the snapshot's time, in seconds."""

    age: float  # since it was sent
    open_gap: float  # since its last content chunk (its send, if no token came)


@dataclass(frozen=True)
class InFlight:
    """The requests in flight at a block's end: a count and the longest open gaps.

    `timeout` is the load pod's request timeout (a request older than it has failed,
    whatever the pod's timer did; None: unknown).
    """

    count: int = 0
    longest: tuple[OpenRequest, ...] = ()
    timeout: float | None = None

    @classmethod
    def of(cls, requests: Iterable[OpenRequest], timeout: float | None) -> InFlight:
        """A snapshot of every request in flight (the longest MAX_OPEN kept)."""
        listed = tuple(requests)
        return cls(len(listed), _longest(listed), timeout)

    def plus(self, other: InFlight) -> InFlight:
        """Two snapshots of the same instant (other workers or shards) together."""
        timeouts = [t for t in (self.timeout, other.timeout) if t is not None]
        return InFlight(
            self.count + other.count,
            _longest(self.longest + other.longest),
            min(timeouts) if timeouts else None,
        )

    def open_gaps_over(self, bound: float) -> tuple[float, ...]:
        """Open gaps longer than `bound`: each a chunk gap at least that long (a lower bound
        on the gap it will be when its next chunk or its end arrives)."""
        return tuple(r.open_gap for r in self.longest if r.open_gap > bound)

    def failed(self, silence: float | None = None) -> int:
        """Requests past the timeout or (given a `silence` bound) silent longer than it:
        failed, though not yet ended in a block; each counted once. Exact while fewer than
        MAX_OPEN are listed or silent (the longest open gaps are kept), else a lower bound."""
        timeout = math.inf if self.timeout is None else self.timeout
        limit = math.inf if silence is None else silence
        return sum(1 for r in self.longest if r.age > timeout or r.open_gap > limit)


def _longest(requests: Iterable[OpenRequest]) -> tuple[OpenRequest, ...]:
    ordered = sorted(requests, key=lambda r: (r.open_gap, r.age), reverse=True)
    return tuple(ordered[:MAX_OPEN])


def in_flight_to_wire(snapshot: InFlight | None) -> dict[str, Any] | None:
    """{"count": n, "timeout": s, "open": [[age, openGap], ...]} (None: unknown)."""
    if snapshot is None:
        return None
    return {
        "count": snapshot.count,
        "timeout": snapshot.timeout,
        "open": [[r.age, r.open_gap] for r in snapshot.longest],
    }


def in_flight_from_wire(value: Mapping[str, Any] | None) -> InFlight | None:
    """Parse `in_flight_to_wire`'s form; a malformed one raises ValueError."""
    if value is None:
        return None
    count, listed, timeout = value["count"], value["open"], value.get("timeout")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"inFlight.count must be an integer >= 0, got {count!r}")
    if not isinstance(listed, list) or len(listed) > min(count, MAX_OPEN):
        raise ValueError(f"inFlight.open must list at most min(count, {MAX_OPEN}) requests")
    requests = []
    for pair in listed:
        age, gap = float(pair[0]), float(pair[1])
        if not (0.0 <= gap <= age + 1e-6 and math.isfinite(age)):
            raise ValueError(f"inFlight.open: {pair!r} is not [age, openGap <= age]")
        requests.append(OpenRequest(age, gap))
    if timeout is not None and not float(timeout) > 0:
        raise ValueError(f"inFlight.timeout must be > 0, got {timeout!r}")
    return InFlight(count, _longest(requests), None if timeout is None else float(timeout))
