"""One worker's current time block: where every timed event of the measuring loop lands.

Why blocks by wall clock: shards and workers run in separate processes, and the operator
joins their measurements by time, so each event goes to the block (a wall-clock multiple
of `block_seconds`) in which it happened: a chunk gap by its arrival, a request's totals
by its end. Timestamps on the hot path are monotonic (`time.perf_counter`); the wall-clock
offset is re-read at each block boundary, never per event. The recorder is the only state
the measuring loop writes: plain counters and sketches, no logging, no encoding; a closed
block goes to `ship` (the worker pickles it to the pod's main process).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from specdecode.domain.observations import AcceptedMoments, LatencyBlock
from specdecode.domain.sketch import Sketch

ShipBlock = Callable[[LatencyBlock], None]


class BlockRecorder:
    """Accumulates the open block and closes it when an event or the timer crosses its end."""

    def __init__(self, block_seconds: float, ship: ShipBlock) -> None:
        if block_seconds <= 0:
            raise ValueError("block seconds must be > 0")
        self.block_seconds = block_seconds
        self._ship = ship
        self.block_end = 0.0  # monotonic time at which the open block ends
        self._start_wall = 0.0
        self._open(time.perf_counter())

    def _open(self, now: float) -> None:
        offset = time.time() - time.perf_counter()
        self._start_wall = math.floor((now + offset) / self.block_seconds) * self.block_seconds
        self.block_end = self._start_wall + self.block_seconds - offset
        self.per_chunk_itl = Sketch()
        self.per_token_itl = Sketch()
        self.time_per_output_token = Sketch()
        self.time_to_first_token = Sketch()
        self.client_delay = Sketch()
        self.requests_ok = 0
        self.requests_failed = 0
        self.output_tokens = 0
        self.chunks = 0
        self.merged_chunks = 0
        self.moments: list[float] = [0, 0.0, 0.0, 0.0, 0.0, 0.0]
        self.last_error: str | None = None

    def close(self) -> LatencyBlock:
        """The open block as a value (does not ship it)."""
        m = self.moments
        return LatencyBlock(
            start=self._start_wall,
            seconds=self.block_seconds,
            per_chunk_itl=self.per_chunk_itl,
            per_token_itl=self.per_token_itl,
            time_per_output_token=self.time_per_output_token,
            time_to_first_token=self.time_to_first_token,
            client_delay=self.client_delay,
            requests_ok=self.requests_ok,
            requests_failed=self.requests_failed,
            output_tokens=self.output_tokens,
            chunks=self.chunks,
            merged_chunks=self.merged_chunks,
            accepted=AcceptedMoments(int(m[0]), m[1], m[2], m[3], m[4], m[5]),
            last_error=self.last_error,
        )

    def roll(self, now: float) -> None:
        """Ship the open block and open the one holding `now` (idle blocks in between are
        not shipped: every worker ships each block it saw, the main process merges)."""
        self._ship(self.close())
        self._open(now)

    def chunk_gap(self, now: float, gap: float, tokens: int, merged: bool) -> None:
        """A content chunk after a request's first: its gap, spread over its tokens."""
        if now >= self.block_end:
            self.roll(now)
        self.per_chunk_itl.add(gap)
        self.per_token_itl.add(gap / tokens, tokens)
        self.chunks += 1
        if merged:
            self.merged_chunks += 1

    def request_end(
        self,
        now: float,
        ttft: float | None,
        tpot: float | None,
        tokens: int,
        steps: int,
        accepted: int,
        error: str | None,
    ) -> None:
        """A finished request's totals (`error` None means it streamed to the end)."""
        if now >= self.block_end:
            self.roll(now)
        self.output_tokens += tokens
        if error is not None:
            self.requests_failed += 1
            self.last_error = error
            return
        self.requests_ok += 1
        if ttft is not None:
            self.time_to_first_token.add(ttft)
        if tpot is not None:
            self.time_per_output_token.add(tpot)
        m = self.moments
        m[0] += 1
        m[1] += steps
        m[2] += accepted
        m[3] += steps * steps
        m[4] += accepted * steps
        m[5] += accepted * accepted

    def delay(self, now: float, late: float) -> None:
        """How late the loop noticed a probe (the instrument's own timestamp delay)."""
        if now >= self.block_end:
            self.roll(now)
        self.client_delay.add(max(late, 0.0))
