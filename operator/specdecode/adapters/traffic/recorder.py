"""Per-engine sample store with bounded memory, read as windows.

Samples are kept with the wall-clock start of their request, so a stage's gates see only
requests that began after its warm-up (`snapshot(since)`). Past `max_samples` a reservoir
keeps a uniform sample, so memory stays bounded on long stages while quantiles stay unbiased.
"""

from __future__ import annotations

import random
from array import array
from dataclasses import dataclass, field

from specdecode.adapters.traffic.client import RequestMeasurement
from specdecode.domain.observations import LatencySamples


@dataclass
class _Series:
    """Timestamped float samples with reservoir sampling past a cap."""

    cap: int
    rng: random.Random
    times: array[float] = field(default_factory=lambda: array("d"))
    values: array[float] = field(default_factory=lambda: array("d"))
    offered: int = 0

    def add(self, at: float, value: float) -> None:
        self.offered += 1
        if len(self.values) < self.cap:
            self.times.append(at)
            self.values.append(value)
            return
        slot = self.rng.randrange(self.offered)
        if slot < self.cap:
            self.times[slot] = at
            self.values[slot] = value

    def since(self, start: float) -> tuple[float, ...]:
        return tuple(v for t, v in zip(self.times, self.values, strict=True) if t >= start)


class LatencyRecorder:
    """Everything measured on one engine during one stage."""

    def __init__(self, max_samples: int, seed: int = 0) -> None:
        rng = random.Random(seed)
        self._per_token = _Series(max_samples, rng)
        self._per_chunk = _Series(max_samples, rng)
        self._tpot = _Series(max_samples, rng)
        self._outcomes: list[tuple[float, bool, int]] = []  # (started_at, ok, output tokens)
        self._max_outcomes = max_samples
        self.last_error: str | None = None

    def record(self, measurement: RequestMeasurement) -> None:
        """Add one finished request's samples."""
        at = measurement.started_at
        if len(self._outcomes) < self._max_outcomes:
            self._outcomes.append((at, measurement.ok, measurement.output_tokens))
        if not measurement.ok:
            self.last_error = measurement.error
            return
        for value in measurement.per_token_itl():
            self._per_token.add(at, value)
        for gap in measurement.chunk_gaps:
            self._per_chunk.add(at, gap)
        tpot = measurement.time_per_output_token()
        if tpot is not None:
            self._tpot.add(at, tpot)

    def snapshot(self, since: float, now: float) -> LatencySamples:
        """Samples of requests that started at or after `since` (wall clock seconds)."""
        outcomes = [o for o in self._outcomes if o[0] >= since]
        return LatencySamples(
            per_token_itl=self._per_token.since(since),
            per_chunk_itl=self._per_chunk.since(since),
            time_per_output_token=self._tpot.since(since),
            requests_ok=sum(1 for o in outcomes if o[1]),
            requests_failed=sum(1 for o in outcomes if not o[1]),
            output_tokens=sum(o[2] for o in outcomes),
            window_seconds=max(0.0, now - since),
        )
