"""A mergeable latency histogram with 0.5 % relative error: what load pods send, gates read.

Why a sketch and not samples: the operator must hold no samples, and geometric buckets know
any value to 0.5 % whatever the range and merge exactly by adding counts (DDSketch without
its collapsing). Bounds read edges, so the 0.5 % only ever widens an interval.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

RELATIVE_ACCURACY = 0.005
GAMMA = (1.0 + RELATIVE_ACCURACY) / (1.0 - RELATIVE_ACCURACY)
_LOG_GAMMA = math.log(GAMMA)
MIN_VALUE = 1e-6  # seconds; anything at or below lands in the lowest bucket
_MIN_INDEX = math.ceil(math.log(MIN_VALUE) / _LOG_GAMMA)


def bucket_index(value: float) -> int:
    """The bucket a value falls in: the smallest i with value <= GAMMA^i."""
    if value <= MIN_VALUE:
        return _MIN_INDEX
    return math.ceil(math.log(value) / _LOG_GAMMA - 1e-12)


def bucket_lower(index: int) -> float:
    """The exclusive lower edge of bucket `index` (0 for the lowest bucket)."""
    return 0.0 if index <= _MIN_INDEX else GAMMA ** (index - 1)


def bucket_upper(index: int) -> float:
    """The inclusive upper edge of bucket `index`."""
    return GAMMA**index


def bucket_value(index: int) -> float:
    """The value that stands for bucket `index`: within RELATIVE_ACCURACY of any member."""
    return 2.0 * GAMMA**index / (GAMMA + 1.0)


@dataclass(frozen=True)
class Sketch:
    """Bucket counts (integers: samples, or tokens for a weighted series). Frozen: `add`
    and `merge` change the counts, never rebind them (a snapshot freezes those too)."""

    counts: dict[int, int] = field(default_factory=dict)

    @classmethod
    def of(cls, values: Iterable[float], weights: Iterable[int] | None = None) -> Sketch:
        """A sketch of exact values (tests, and the load pod's own recording)."""
        sketch = cls()
        if weights is None:
            for value in values:
                sketch.add(value)
        else:
            for value, weight in zip(values, weights, strict=True):
                sketch.add(value, weight)
        return sketch

    @property
    def total(self) -> int:
        """How many samples (or how much weight) the sketch holds."""
        return sum(self.counts.values())

    def add(self, value: float, weight: int = 1) -> None:
        """Count one value `weight` times."""
        index = bucket_index(value)
        self.counts[index] = self.counts.get(index, 0) + weight

    def merge(self, other: Sketch) -> None:
        """Add another sketch's counts to this one."""
        for index, count in other.counts.items():
            self.counts[index] = self.counts.get(index, 0) + count

    def copy(self) -> Sketch:
        """An independent copy."""
        return Sketch(dict(self.counts))

    def bucket_of_rank(self, rank: int) -> int:
        """The bucket holding the `rank`-th smallest sample (1-based, clamped to 1..total)."""
        if not self.counts:
            raise ValueError("empty sketch has no order statistics")
        rank = min(max(rank, 1), self.total)
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                return index
        raise AssertionError("unreachable: rank <= total")

    def quantile(self, q: float) -> float:
        """The q-quantile's representative value (the ceil(q n)-th smallest sample)."""
        return bucket_value(self.bucket_of_rank(math.ceil(q * self.total)))

    def to_wire(self) -> dict[str, object]:
        """Dense JSON form: {"offset": lowest index, "counts": [...]} (empty: no counts)."""
        if not self.counts:
            return {"offset": 0, "counts": []}
        low, high = min(self.counts), max(self.counts)
        return {"offset": low, "counts": [self.counts.get(i, 0) for i in range(low, high + 1)]}

    @classmethod
    def from_wire(cls, data: Mapping[str, object]) -> Sketch:
        """Parse `to_wire`'s form; a malformed one raises ValueError."""
        offset, counts = data.get("offset", 0), data.get("counts", [])
        if not isinstance(offset, int) or not isinstance(counts, list):
            raise ValueError("sketch: offset must be an integer and counts a list")
        if any(not isinstance(c, int) or c < 0 for c in counts):
            raise ValueError("sketch: counts must be integers >= 0")
        return cls({offset + i: c for i, c in enumerate(counts) if c})
