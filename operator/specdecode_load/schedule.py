"""Which request comes next: identical on both sides, split over shards and workers.

Why deterministic by index: the sides run at their own pace and cannot share a random
stream, so request i is a pure function of (seed, i); shards and workers take disjoint
strides, and cost caps are split so no two processes need to talk. More: docs/internals.md.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

_MASK64 = (1 << 64) - 1


def mix64(value: int) -> int:
    """SplitMix64's finaliser: a fast, well-spread hash of a 64-bit integer."""
    value = (value + 0x9E3779B97F4A7C15) & _MASK64
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK64
    return value ^ (value >> 31)


def prompt_choice(seed: int, index: int, prompts: int) -> int:
    """The prompt request `index` replays: the same on every side, shard and worker."""
    return mix64((seed & _MASK64) ^ mix64(index)) % prompts


def split_evenly(total: int, parts: int, part: int) -> int:
    """Part `part`'s share of `total` when split into `parts` near-equal integer shares."""
    return total // parts + (1 if part < total % parts else 0)


@dataclass
class WorkerSchedule:
    """One worker's request indices and what is left of its budget."""

    shard: int
    shards: int
    worker: int
    workers: int
    max_requests: int | None = None  # this worker's share of the remaining budget
    max_output_tokens: int | None = None
    start_position: int = 0  # indices already used by earlier boots are skipped
    sent: int = 0
    output_tokens: int = 0

    def next_index(self) -> int | None:
        """The next request index, or None once a cap is reached."""
        if self.cap_reached:
            return None
        position = self.start_position + self.sent
        self.sent += 1
        return self.shard + self.shards * (self.worker + self.workers * position)

    def add_output_tokens(self, tokens: int) -> None:
        """Count tokens that came back (the token budget is spent by answers)."""
        self.output_tokens += tokens

    @property
    def cap_reached(self) -> bool:
        """True once this worker may send nothing more."""
        if self.max_requests is not None and self.sent >= self.max_requests:
            return True
        return self.max_output_tokens is not None and self.output_tokens >= self.max_output_tokens


def worker_schedules(
    shard: int,
    shards: int,
    workers: int,
    max_requests: int | None,
    max_output_tokens: int | None,
    already_sent: int = 0,
    already_output_tokens: int = 0,
) -> list[WorkerSchedule]:
    """The shard's schedules, continuing after `already_sent` requests of earlier boots."""
    remaining_requests = None if max_requests is None else max(max_requests - already_sent, 0)
    remaining_tokens = (
        None if max_output_tokens is None else max(max_output_tokens - already_output_tokens, 0)
    )
    # Earlier boots used about sent / workers positions of each worker's sequence; starting
    # there continues the sequence (an uneven split may replay or skip a handful of indices,
    # harmless: request i is the same on both sides whenever it is sent).
    start = math.ceil(already_sent / workers)
    return [
        WorkerSchedule(
            shard=shard,
            shards=shards,
            worker=w,
            workers=workers,
            max_requests=None
            if remaining_requests is None
            else split_evenly(remaining_requests, workers, w),
            max_output_tokens=None
            if remaining_tokens is None
            else split_evenly(remaining_tokens, workers, w),
            start_position=start,
        )
        for w in range(workers)
    ]


def split_concurrency(concurrency: int, workers: int) -> list[int]:
    """Closed-loop streams per worker (a worker may get none when streams < workers)."""
    return [split_evenly(concurrency, workers, w) for w in range(workers)]


def arrival_gaps(seed: int, shard: int, worker: int, rate: float) -> random.Random:
    """The seeded Poisson clock of one worker (same parameters, same arrivals, both sides)."""
    if rate <= 0:
        raise ValueError("request rate must be > 0")
    return random.Random(mix64(seed & _MASK64) ^ (shard << 20) ^ worker)


# How far an open-loop sender may fall behind its schedule before it drops arrivals.
MAX_ARRIVAL_LAG_SECONDS = 1.0


def next_arrival(previous: float, now: float, gap: Callable[[], float]) -> tuple[float, int]:
    """The open-loop send time after `previous` (drawing gaps from `gap`), and how many
    arrivals were skipped to get there.

    Why skip: a sender more than MAX_ARRIVAL_LAG_SECONDS behind its schedule (its loop was
    starved, or every in-flight slot was held) would otherwise send its whole backlog at
    once, a burst the stage never asked for. Why count: the side was then offered less than
    the stage's request rate, which the comparing gates must know (the load report's
    `arrivalsSkipped`; `gate_measures.unequal_load`). A sender on time draws
    exactly one gap, so both sides' schedules stay the same while neither falls behind.
    """
    at = previous + gap()
    skipped = 0
    while at < now - MAX_ARRIVAL_LAG_SECONDS:
        skipped += 1
        at += gap()
    return at, skipped
