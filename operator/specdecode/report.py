"""The gate table people read in a terminal: stages, gates, numbers with bounds, verdicts.

One pure function over a rollout as the API server returns it (a plain dict), shared by the
demo and the `kubectl specdecode` plugin, so both show exactly what the status holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from specdecode.domain.close_call import close_call_of
from specdecode.vocabulary import GateType


def _number(value: object, digits: int = 3) -> str:
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return "-"


def _interval(gate: Mapping[str, Any]) -> str:
    low, high = gate.get("lowerBound"), gate.get("upperBound")
    if low is None and high is None:
        return "-"
    return f"[{_number(low)}, {_number(high)}]"


def _since(timestamp: object, now: datetime | None) -> str:
    if not isinstance(timestamp, str) or now is None:
        return "-"
    started = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return f"{max(0, int((now - started).total_seconds()))}s"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def gate_table(rollout: Mapping[str, Any], now: datetime | None = None) -> str:
    """A few lines: the rollout's phase and why, then one row per gate of every stage."""
    meta = rollout.get("metadata", {})
    status: Mapping[str, Any] = rollout.get("status") or {}
    lines = [
        f"{meta.get('namespace', '')}/{meta.get('name', '')}: phase {status.get('phase', '-')}"
        f"  stage {status.get('currentStage') or '-'}  verdict {status.get('verdict') or '-'}",
    ]
    if status.get("message"):
        lines.append(f"  {status['message']}")
    lines += _drift_lines(status)
    lines += _workload_lines(status)
    lines += _load_lines(status)
    lines += _traffic_lines(status)
    rows: list[list[str]] = [
        [
            "STAGE",
            "STATE",
            "IN-STAGE",
            "GATE",
            "VERDICT",
            "VALUE",
            "BOUNDS",
            "THRESHOLD",
            "SAMPLES",
            "REASON",
        ]
    ]
    for stage in status.get("stages") or []:
        gates = stage.get("gates") or [{}]
        for gate in gates:
            rows.append(
                [
                    stage.get("name", "-"),
                    stage.get("phase", "-"),
                    _since(stage.get("startedAt"), now) if not stage.get("finishedAt") else "done",
                    gate.get("name", "-") + _gate_role(gate),
                    gate.get("verdict", "-") + (" (close call)" if gate.get("closeCall") else ""),
                    _number(gate.get("value")),
                    _interval(gate),
                    _number(gate.get("threshold")),
                    str(gate.get("samples", "-")),
                    (gate.get("reason") or "")[:90],
                ]
            )
    if len(rows) > 1:
        lines.extend("  " + line for line in _table(rows))
    lines += _close_call_lines(status)
    return "\n".join(lines)


def _close_call_lines(status: Mapping[str, Any]) -> list[str]:
    """Under the table, each close call in full (its reason column is cut to 90 chars)."""
    lines = []
    for stage in status.get("stages") or []:
        for gate in stage.get("gates") or []:
            if gate.get("type") not in set(GateType):
                continue
            close = close_call_of(
                GateType(gate["type"]),
                bool(gate.get("closeCall")),
                gate.get("value"),
                gate.get("lowerBound"),
                gate.get("upperBound"),
                gate.get("threshold"),
            )
            if close is not None:
                lines.append(f"  {stage.get('name', '-')}/{gate.get('name', '-')}: {close}")
    return lines


def _drift_lines(status: Mapping[str, Any]) -> list[str]:
    """The drift guard's finding, when it holds one: what on-call is paged for."""
    drift = status.get("drift") or {}
    if not drift:
        return []
    if drift.get("kind") == "Latency":
        share, low, high, allowed = (
            _number(drift.get(key), 4)
            for key in ("tailShare", "lowerBound", "upperBound", "threshold")
        )
        return [
            f"  DRIFTED (latency) since {drift.get('detectedAt', '-')}: production's step-ITL "
            f"share above {_number(drift.get('edgeSeconds'))} s {share} [{low}, {high}] > "
            f"{allowed} (analysis {_number(drift.get('referenceSeconds'))} s)"
        ]
    return [
        f"  DRIFTED since {drift.get('detectedAt', '-')}: production alpha "
        f"{_number(drift.get('alpha'))} [{_number(drift.get('lowerBound'))}, "
        f"{_number(drift.get('upperBound'))}] < minAlpha {_number(drift.get('threshold'))}"
    ]


def _workload_lines(status: Mapping[str, Any]) -> list[str]:
    """The Deployment an adopted rollout judges, and where its owner's patch is."""
    workload = status.get("workload") or {}
    if not workload:
        return []
    patch = "kubectl specdecode patch NAME" if workload.get("ownerPatch") else "none yet"
    dropped = ", ".join(workload.get("droppedLabels") or []) or "-"
    return [f"  source {workload.get('source', '-')} (labels dropped: {dropped}; patch: {patch})"]


def _load_lines(status: Mapping[str, Any]) -> list[str]:
    """The current stage's shadow load: shards answering, requests, the client's own delay."""
    index = status.get("currentStageIndex")
    stages = status.get("stages") or []
    if not isinstance(index, int) or index >= len(stages) or not stages[index].get("load"):
        return []
    load = stages[index]["load"]
    delay = load.get("clientDelayP99Ms")
    line = (
        f"  shadow load: shards {load.get('shards', '-')} (baseline/candidate), "
        f"{load.get('requests', 0)} requests in window, client delay P99 "
        f"{'-' if delay is None else f'{delay:.2f} ms'}"
    )
    outcomes = [f"    {side}" for side in load.get("outcomes") or []]
    return [line, *outcomes, *(f"    {note}" for note in load.get("notes") or [])]


def _traffic_lines(status: Mapping[str, Any]) -> list[str]:
    """The candidate's acceptance by traffic group, of the stage in progress or, after the
    analysis, the last stage that ran (where status keeps it): which traffic it fails."""
    stages = status.get("stages") or []
    with_split = [s for s in stages if (s.get("load") or {}).get("acceptanceByTraffic")]
    if not with_split:
        return []
    stage = with_split[-1]
    rows = [
        ["CLASS", "TEMPERATURE", "LENGTH", "ALPHA", "BOUNDS", "ACCEPTED/STEP", "REQUESTS", "BASIS"]
    ]
    for group in stage["load"]["acceptanceByTraffic"]:
        rows.append(
            [
                str(group.get("trafficClass", "-")),
                str(group.get("temperature", "-")),
                str(group.get("outputLength", "-")),
                _number(group.get("alpha")),
                _interval(group),
                _number(group.get("acceptedPerStep"), 2),
                str(group.get("requests", 0)),
                str(group.get("basis", "-")),
            ]
        )
    heading = f"  candidate acceptance by traffic (stage {stage.get('name', '-')}):"
    return [heading, *("    " + line for line in _table(rows))]


def _gate_role(gate: dict[str, Any]) -> str:
    """' (dry-run)' or ' (fail-only)' after a gate's name: whether its verdict can fail or
    pass the stage is not its verdict."""
    if gate.get("dryRun"):
        return " (dry-run)"
    return " (fail-only)" if gate.get("failOnly") else ""
