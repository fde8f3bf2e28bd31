"""One side's measuring window from its load shards' reports: the gates' latency input.

Pure. Same-start blocks of different shards merge (the time block is the unit), only whole
blocks inside the window count, a shard's gap drops those blocks on every shard of the side,
and a shard that did not answer makes the window incomplete (Inconclusive), never a
verdict. More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from specdecode.domain.load_flags import WARMUP_SECONDS
from specdecode.domain.load_report import Gap, LoadReport
from specdecode.domain.observations import LatencyBlock, LatencySamples


def _gaps(report: LoadReport, since: float) -> tuple[Gap, ...]:
    """The report's own gaps, plus "created late" when its pod started inside the window."""
    first_boot = report.boot_time if report.first_boot_time is None else report.first_boot_time
    late: tuple[Gap, ...] = ()
    if first_boot + WARMUP_SECONDS > since:
        late = (Gap(since, first_boot + WARMUP_SECONDS, "load pod started late"),)
    return late + tuple(gap for gap in report.gaps if gap.end > since)


def side_window(
    side: str,
    reports: Sequence[LoadReport],
    missing: Sequence[str],
    since: float,
    now: float,
) -> LatencySamples | None:
    """The window of one side; None while no shard has anything to say yet.

    `missing` names the expected shards that did not answer (with why).
    """
    if not reports and not missing:
        return None
    if missing:
        return LatencySamples(
            window_seconds=max(0.0, now - since),
            shards=len(reports),
            incomplete=f"{side} load incomplete: {'; '.join(missing)}",
        )
    gaps = [gap for report in reports for gap in _gaps(report, since)]
    merged: dict[float, LatencyBlock] = {}
    for report in reports:
        for block in report.blocks:
            if block.start < since or block.start + block.seconds > now:
                continue
            if any(
                block.start < gap.end and gap.start < block.start + block.seconds for gap in gaps
            ):
                continue
            known = merged.get(block.start)
            merged[block.start] = block if known is None else known.plus(block)
    notes = tuple(
        f"{side} shard {report.shard}: {gap.reason}, {gap.end - gap.start:.0f} s without "
        "samples (dropped on every shard)"
        for report in reports
        for gap in _gaps(report, since)
    )
    return LatencySamples(
        blocks=tuple(merged[start] for start in sorted(merged)),
        window_seconds=max(0.0, now - since),
        shards=len(reports),
        gaps=notes,
    )


def shards_window(
    side: str, shards: int, read: Mapping[int, LoadReport | str], since: float, now: float
) -> LatencySamples | None:
    """A side's window from its `shards` load pods (`read`: each shard's report, or why it
    has none; a shard not in it has no running load pod).

    A shard without a report makes the window incomplete; no report at all is nothing
    measured yet (pods starting): None, not an incomplete window.
    """
    reports: list[LoadReport] = []
    missing: list[str] = []
    for shard in range(shards):
        found = read.get(shard, f"shard {shard} has no running load pod")
        if isinstance(found, str):
            missing.append(found)
        else:
            reports.append(found)
    if not reports:
        return None
    return side_window(side, reports, missing, since, now)


def splitter_window(
    side: str, read: LoadReport | str | None, since: float, now: float
) -> LatencySamples | None:
    """A side's window from the splitter (`read`: its report, or why it has none; None: no
    splitter running yet, so nothing measured, not an incomplete window)."""
    if read is None:
        return None
    if isinstance(read, str):
        return side_window(side, [], [read], since, now)
    return side_window(side, [read], [], since, now)
