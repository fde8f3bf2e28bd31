"""What survives a load-container restart: closed blocks and the running totals.

Why: a restarted container must neither forget what it measured (the operator may not
have read it yet) nor its spent budget (a crash loop would otherwise send without end),
and it must say that it restarted, so a window that spans the restart is never silently
mixed. `--state-dir` is an emptyDir (it survives container restarts, not pod deletion).
Blocks go to an append-only JSONL file (compacted when it grows past twice the bound);
the totals to a small JSON file replaced atomically. Only the pod's main process writes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from specdecode.domain.load_report import Gap, ReportError, block_from_wire, block_to_wire
from specdecode.domain.observations import LatencyBlock

BLOCKS_FILE = "blocks.jsonl"
TOTALS_FILE = "totals.json"
RESTART_REASON = "load container restarted"


@dataclass
class Totals:
    """Running totals over every boot of this pod."""

    first_boot_time: float
    restarts: int = 0
    sent: int = 0
    output_tokens: int = 0
    last_block_end: float | None = None
    gaps: list[Gap] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "firstBootTime": self.first_boot_time,
            "restarts": self.restarts,
            "sent": self.sent,
            "outputTokens": self.output_tokens,
            "lastBlockEnd": self.last_block_end,
            "gaps": [[g.start, g.end, g.reason] for g in self.gaps],
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Totals:
        """Parse `to_json`'s form (ValueError/TypeError/KeyError when damaged)."""
        last = data.get("lastBlockEnd")
        gaps = data.get("gaps") or []
        assert isinstance(gaps, list)
        return cls(
            first_boot_time=float(str(data["firstBootTime"])),
            restarts=int(str(data["restarts"])),
            sent=int(str(data["sent"])),
            output_tokens=int(str(data["outputTokens"])),
            last_block_end=None if last is None else float(str(last)),
            gaps=[Gap(float(a), float(b), str(r)) for a, b, r in gaps],
        )


class StateDir:
    """The state directory of one load container."""

    def __init__(self, path: Path, max_blocks: int) -> None:
        self.path = path
        self._max_blocks = max_blocks
        self._appended = 0
        path.mkdir(parents=True, exist_ok=True)

    def load(self) -> tuple[Totals | None, list[LatencyBlock]]:
        """The previous boot's totals and its newest blocks (None, [] on a first boot)."""
        totals_path = self.path / TOTALS_FILE
        if not totals_path.exists():
            return None, []
        try:
            totals = Totals.from_json(json.loads(totals_path.read_text()))
        except (ValueError, TypeError, KeyError, AssertionError) as error:
            raise ValueError(f"state dir {self.path}: damaged {TOTALS_FILE}: {error}") from error
        blocks: list[LatencyBlock] = []
        blocks_path = self.path / BLOCKS_FILE
        if blocks_path.exists():
            for line in blocks_path.read_text().splitlines():
                try:
                    blocks.append(block_from_wire(json.loads(line)))
                except (ValueError, ReportError):
                    continue  # a line cut short by the crash: the restart gap covers it
        return totals, blocks[-self._max_blocks :]

    def begin_boot(self, blocks: list[LatencyBlock]) -> None:
        """Rewrite the block file with what was kept (compaction at every boot)."""
        self._rewrite(blocks)

    def append_block(self, block: LatencyBlock, recent: tuple[LatencyBlock, ...]) -> None:
        """Persist a completed block; `recent` is what to keep when compacting."""
        self._appended += 1
        if self._appended > 2 * self._max_blocks:
            self._rewrite(list(recent))
            return
        with (self.path / BLOCKS_FILE).open("a") as file:
            file.write(json.dumps(block_to_wire(block), separators=(",", ":")) + "\n")

    def save_totals(self, totals: Totals) -> None:
        """Replace the totals file atomically."""
        temporary = self.path / (TOTALS_FILE + ".tmp")
        temporary.write_text(json.dumps(totals.to_json()))
        os.replace(temporary, self.path / TOTALS_FILE)

    def _rewrite(self, blocks: list[LatencyBlock]) -> None:
        temporary = self.path / (BLOCKS_FILE + ".tmp")
        with temporary.open("w") as file:
            for block in blocks:
                file.write(json.dumps(block_to_wire(block), separators=(",", ":")) + "\n")
        os.replace(temporary, self.path / BLOCKS_FILE)
        self._appended = 0
