"""One worker's current time block: where every timed event of the measuring loop lands.

Why blocks by wall clock: the operator joins processes' measurements by time, so an event
lands in the block it happened in. The hot path uses monotonic stamps and only counters
and sketches: no logging, no encoding. More: docs/internals.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from specdecode.domain.in_flight import InFlight
from specdecode.domain.latency_block import (
    BLOCK_FIELDS,
    AcceptedMoments,
    GroupEvidence,
    LatencyBlock,
)
from specdecode.domain.sketch import Sketch

ShipBlock = Callable[[LatencyBlock], None]
InFlightProbe = Callable[[float], InFlight]  # monotonic time -> the requests in flight then


class BlockRecorder:
    """Accumulates the open block and closes it when an event or the timer crosses its end.

    The open block's values are attributes named as `LatencyBlock`'s fields, reset and
    collected from `BLOCK_FIELDS`; the event methods below write the ones they measure.
    """

    # written on the hot path (the rest of BLOCK_FIELDS is only reset and collected)
    per_chunk_itl: Sketch
    per_token_itl: Sketch
    time_per_output_token: Sketch
    time_to_first_token: Sketch
    client_delay: Sketch
    slot_seconds: Sketch
    requests_ok: int
    requests_failed: int
    failures: dict[str, int]
    output_tokens: int
    chunks: int
    merged_chunks: int
    stalls: int
    arrivals_skipped: int
    accepted: AcceptedMoments
    by_traffic: dict[str, GroupEvidence]
    last_error: str | None
    in_flight: InFlight | None

    def __init__(
        self, block_seconds: float, ship: ShipBlock, in_flight: InFlightProbe | None = None
    ) -> None:
        if block_seconds <= 0:
            raise ValueError("block seconds must be > 0")
        self.block_seconds = block_seconds
        self._ship = ship
        self.probe_in_flight = in_flight
        self.block_end = 0.0  # monotonic time at which the open block ends
        self._start_wall = 0.0
        self._open(time.perf_counter())

    def _open(self, now: float) -> None:
        offset = time.time() - time.perf_counter()
        self._start_wall = math.floor((now + offset) / self.block_seconds) * self.block_seconds
        self.block_end = self._start_wall + self.block_seconds - offset
        for f in BLOCK_FIELDS:
            setattr(self, f.name, f.fresh())

    def close(self, now: float | None = None) -> LatencyBlock:
        """The open block as a value (does not ship it), with the requests in flight at its
        end, or at `now` if that is earlier (a block closed early: the pod stops)."""
        if self.probe_in_flight is not None:
            at = self.block_end if now is None else min(now, self.block_end)
            self.in_flight = self.probe_in_flight(at)
        values = {f.name: getattr(self, f.name) for f in BLOCK_FIELDS}
        return LatencyBlock(start=self._start_wall, seconds=self.block_seconds, **values)

    def roll(self, now: float) -> None:
        """Ship the open block and open the one holding `now` (idle blocks in between are
        not shipped: every worker ships each block it saw, the main process merges)."""
        self._ship(self.close(now))
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
        outcome: str | None = None,
        slot: float | None = None,
        stall: float | None = None,
        group: str | None = None,
        engine: tuple[int, int, int] | None = None,
    ) -> None:
        """A request's end. `error` None means it streamed to the end; otherwise `outcome`
        names the failure (`LatencyBlock.failures`' keys). `slot`: send to end; `stall`:
        the wait that ended an unfinished request, one gap of one token (see connection).
        `group`: its traffic group; `engine`: the engine's own (verify steps, draft tokens,
        accepted draft tokens) for it, when its final chunk said."""
        if now >= self.block_end:
            self.roll(now)
        self.output_tokens += tokens
        if slot is not None:
            self.slot_seconds.add(slot)
        if ttft is not None:
            self.time_to_first_token.add(ttft)
        if tpot is not None:
            self.time_per_output_token.add(tpot)
        if stall is not None:
            self.per_chunk_itl.add(stall)
            self.per_token_itl.add(stall)
            self.stalls += 1
        if error is not None:
            self.requests_failed += 1
            key = outcome or "error"
            self.failures[key] = self.failures.get(key, 0) + 1
            self.last_error = error
            return
        self.requests_ok += 1
        streamed = AcceptedMoments.one(steps, accepted)
        self.accepted = self.accepted.plus(streamed)
        if group is not None:
            evidence = GroupEvidence(streamed)
            if engine is not None:
                engine_steps, drafted, engine_accepted = engine
                evidence = GroupEvidence(
                    streamed, AcceptedMoments.one(drafted, engine_accepted), engine_steps
                )
            known = self.by_traffic.get(group)
            self.by_traffic[group] = evidence if known is None else known.plus(evidence)

    def skipped(self, now: float, arrivals: int) -> None:
        """Open-loop arrivals dropped because the sender fell behind (see `next_arrival`)."""
        if now >= self.block_end:
            self.roll(now)
        self.arrivals_skipped += arrivals

    def delay(self, now: float, late: float) -> None:
        """How late the loop noticed a probe (the instrument's own timestamp delay)."""
        if now >= self.block_end:
            self.roll(now)
        self.client_delay.add(max(late, 0.0))
