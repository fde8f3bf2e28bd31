"""Per-pod `state.json` files: what tests read, and what a restarted agent cleans up from.

`<state dir>/pods/<namespace>/<pod>/state.json` holds
`{"uid", "namespace", "name", "node", "pod_ip", "containers": {"<name>": {"pid",
"restarts", "exit_code", "started_at"}}}`; `pid` is null when no process runs.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from .process import kill_stray_group
from .promsd import write_atomically

STATE_FILE = "state.json"
log = logging.getLogger(__name__)


def write_state(pod_dir: Path, state: dict[str, Any]) -> None:
    """Write a pod's state atomically."""
    write_atomically(pod_dir / STATE_FILE, json.dumps(state, indent=2, sort_keys=True) + "\n")


def read_state(pod_dir: Path) -> dict[str, Any] | None:
    """A pod's state, or None if there is none (or it is unreadable)."""
    try:
        loaded = json.loads((pod_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def previous_states(state_dir: Path) -> dict[str, dict[str, Any]]:
    """Every state file left by an earlier run, by pod UID."""
    states: dict[str, dict[str, Any]] = {}
    for path in sorted((state_dir / "pods").glob(f"*/*/{STATE_FILE}")):
        state = read_state(path.parent)
        if state and state.get("uid"):
            states[str(state["uid"])] = state
    return states


def kill_recorded_processes(state: dict[str, Any]) -> list[int]:
    """Kill the process groups a state file names, if they still belong to that pod."""
    killed: list[int] = []
    for name, record in (state.get("containers") or {}).items():
        pid = record.get("pid")
        if isinstance(pid, int) and kill_stray_group(pid, str(state["uid"])):
            log.info(
                "killed leftover process %d of %s/%s container %s",
                pid,
                state.get("namespace"),
                state.get("name"),
                name,
            )
            killed.append(pid)
    return killed
