"""Container logs for tests: the `kubectl logs` equivalent, read from the agent's files."""

from __future__ import annotations

from pathlib import Path

from .state import read_state


def log_path(
    state_dir: Path | str, namespace: str, pod: str, container: str, previous: bool = False
) -> Path:
    """Where a container's (current or previous) log lives."""
    suffix = ".previous.log" if previous else ".log"
    return Path(state_dir) / "pods" / namespace / pod / f"{container}{suffix}"


def read_logs(
    state_dir: Path | str,
    namespace: str,
    pod: str,
    container: str | None = None,
    *,
    previous: bool = False,
    tail: int | None = None,
) -> str:
    """A container's log text (like `kubectl logs [-p] [--tail N]`).

    Without `container`, the pod must have exactly one container (as kubectl requires).
    Raises FileNotFoundError when there is no such log.
    """
    if container is None:
        pod_dir = Path(state_dir) / "pods" / namespace / pod
        state = read_state(pod_dir) or {}
        names = list(state.get("main_containers") or sorted(state.get("containers") or {}))
        if len(names) != 1:
            raise ValueError(f"pod {namespace}/{pod} has containers {names}; name one")
        container = names[0]
    text = log_path(state_dir, namespace, pod, container, previous).read_text(errors="replace")
    if tail is not None:
        lines = text.splitlines(keepends=True)
        text = "".join(lines[-tail:]) if tail > 0 else ""
    return text
