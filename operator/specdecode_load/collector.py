"""The pod's merged blocks: workers' blocks of the same start added together, bounded.

Why completeness before reporting: a block is reported only once every live worker has
moved past it, so a report never shows a block that would still grow (the operator reads
whole blocks and may never read one twice). Blocks whose start falls in the warm-up after
a container restart are dropped, and the memory bound (`max_blocks`) drops the oldest;
both leave a `Gap` saying so, never a silent hole.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from specdecode.domain.load_report import Gap
from specdecode.domain.observations import LatencyBlock

DROPPED_REASON = "report buffer full: oldest blocks dropped (--max-blocks)"


class Collector:
    """Merges worker blocks into completed pod blocks and keeps the newest `max_blocks`."""

    def __init__(
        self,
        workers: Iterable[int],
        max_blocks: int,
        restored: Iterable[LatencyBlock] = (),
        gaps: Iterable[Gap] = (),
        skip_before: float = 0.0,
        on_complete: Callable[[LatencyBlock], None] | None = None,
    ) -> None:
        if max_blocks < 1:
            raise ValueError("max blocks must be >= 1")
        self._max_blocks = max_blocks
        self._latest: dict[int, float] = {w: float("-inf") for w in workers}
        self._pending: dict[float, LatencyBlock] = {}
        self._blocks: deque[LatencyBlock] = deque()
        self._gaps: list[Gap] = list(gaps)
        self._skip_before = skip_before
        self._on_complete = on_complete
        for block in restored:
            self._keep(block)

    @property
    def gaps(self) -> tuple[Gap, ...]:
        """Every recorded gap, oldest first."""
        return tuple(self._gaps)

    @property
    def blocks(self) -> tuple[LatencyBlock, ...]:
        """Completed blocks, oldest first."""
        return tuple(self._blocks)

    def blocks_since(self, since: float) -> tuple[LatencyBlock, ...]:
        """Completed blocks that start at or after `since`."""
        return tuple(b for b in self._blocks if b.start >= since)

    def gaps_since(self, since: float) -> tuple[Gap, ...]:
        """Gaps that end after `since`."""
        return tuple(g for g in self._gaps if g.end > since)

    def add(self, worker: int, block: LatencyBlock) -> None:
        """A worker shipped a closed block."""
        pending = self._pending.get(block.start)
        self._pending[block.start] = block if pending is None else pending.plus(block)
        if worker in self._latest:
            self._latest[worker] = max(self._latest[worker], block.start)
        self._complete()

    def worker_done(self, worker: int) -> None:
        """A worker exited: stop waiting for it."""
        self._latest.pop(worker, None)
        self._complete()

    def _complete(self) -> None:
        horizon = min(self._latest.values(), default=float("inf"))
        for start in sorted(s for s in self._pending if s <= horizon):
            block = self._pending.pop(start)
            if block.start < self._skip_before:
                continue  # warm-up after a restart: covered by the restart gap
            self._keep(block)
            if self._on_complete is not None:
                self._on_complete(block)

    def _keep(self, block: LatencyBlock) -> None:
        self._blocks.append(block)
        while len(self._blocks) > self._max_blocks:
            dropped = self._blocks.popleft()
            self._add_gap(Gap(dropped.start, dropped.start + dropped.seconds, DROPPED_REASON))

    def _add_gap(self, gap: Gap) -> None:
        last = self._gaps[-1] if self._gaps else None
        if last is not None and last.reason == gap.reason and last.end >= gap.start:
            self._gaps[-1] = Gap(last.start, max(last.end, gap.end), last.reason)
        else:
            self._gaps.append(gap)
