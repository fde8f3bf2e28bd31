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
        # Exact counts per second of request start: bounded by the stage's length, not load.
        self._counts: dict[int, list[int]] = {}  # second -> [ok, failed, output tokens]
        self.last_error: str | None = None

    def record(self, measurement: RequestMeasurement) -> None:
        """Add one finished request's samples."""
        at = measurement.started_at
        counts = self._counts.setdefault(int(at), [0, 0, 0])
        counts[0 if measurement.ok else 1] += 1
        counts[2] += measurement.output_tokens
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
        window = [c for second, c in self._counts.items() if second >= since]
        return LatencySamples(
            per_token_itl=self._per_token.since(since),
            per_chunk_itl=self._per_chunk.since(since),
            time_per_output_token=self._tpot.since(since),
            requests_ok=sum(c[0] for c in window),
            requests_failed=sum(c[1] for c in window),
            output_tokens=sum(c[2] for c in window),
            window_seconds=max(0.0, now - since),
        )
