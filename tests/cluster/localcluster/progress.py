"""What changed between two reads of a rollout, one line per change, for the demo.

The gate table (`specdecode.report.gate_table`) is the whole picture, and its in-stage
clock changes every second: printed on every change it scrolls a screen a second. The demo
prints the table once when a stage starts and at the verdict, and in between one line per
thing a person watching would want to know: the phase, the stage, a gate's new look
(estimate, bounds, threshold, verdict) and the message. Pure: two dicts in, lines out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The fields of a gate whose change is a new look worth a line.
LOOK_FIELDS = ("verdict", "value", "lowerBound", "upperBound", "samples", "closeCall")


def _number(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "-"


def _gates(document: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """Every gate of every stage, keyed by (stage, gate) name."""
    status = document.get("status") or {}
    return {
        (str(stage.get("name", "-")), str(gate.get("name", "-"))): gate
        for stage in status.get("stages") or []
        for gate in stage.get("gates") or []
    }


def gate_line(stage: str, name: str, gate: Mapping[str, Any]) -> str:
    """One gate's look: `stage/gate: Verdict value [low, high] vs threshold (n samples)`."""
    verdict = str(gate.get("verdict", "-")) + (" (close call)" if gate.get("closeCall") else "")
    bounds = f"[{_number(gate.get('lowerBound'))}, {_number(gate.get('upperBound'))}]"
    return (
        f"{stage}/{name}: {verdict} {_number(gate.get('value'))} {bounds} "
        f"vs {_number(gate.get('threshold'))} ({gate.get('samples', '-')} samples)"
    )


def gates_with_verdict(document: Mapping[str, Any], verdict: str) -> list[str]:
    """The look of every gate whose verdict is `verdict` (e.g. the Failed gates that rolled
    a weak draft head back), one `gate_line` each."""
    return [
        gate_line(*key, gate)
        for key, gate in _gates(document).items()
        if gate.get("verdict") == verdict
    ]


def change_lines(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """The lines saying what changed from ``before`` (None: nothing seen yet) to ``after``."""
    old: Mapping[str, Any] = (before or {}).get("status") or {}
    new: Mapping[str, Any] = after.get("status") or {}
    lines = []
    if new.get("phase") != old.get("phase"):
        lines.append(f"phase {old.get('phase') or '-'} -> {new.get('phase') or '-'}")
    if new.get("currentStage") != old.get("currentStage") and new.get("currentStage"):
        lines.append(f"stage {new['currentStage']} started")
    old_gates = _gates(before or {})
    for key, gate in _gates(after).items():
        previous = old_gates.get(key, {})
        if any(gate.get(field) != previous.get(field) for field in LOOK_FIELDS):
            lines.append(gate_line(*key, gate))
    if new.get("message") and new.get("message") != old.get("message"):
        lines.append(f"  {new['message']}")
    return lines


def stage_started(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> bool:
    """Whether ``after`` is in a stage ``before`` was not (the moment to show the table)."""
    old = ((before or {}).get("status") or {}).get("currentStage")
    new = (after.get("status") or {}).get("currentStage")
    return bool(new) and new != old
