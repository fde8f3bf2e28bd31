"""Child processes of the harness: start with a log file, wait with a deadline, stop for good.

Why this shape: every component runs in its own session (process group) so `down` can stop
it together with anything it spawned, its pid is written to ``.cluster/pids/`` so a later
command (or a crashed test run's cleanup) can find it, and every wait checks both the
condition and whether the process already died, failing with the component's last log lines
instead of hanging.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from localcluster.paths import MARKER_ENV, ClusterPaths

LOG_TAIL_LINES = 40


class ComponentFailed(RuntimeError):
    """A component exited or did not become ready; the message carries its last log lines."""

    def __init__(self, component: str, reason: str, log_file: Path | None) -> None:
        tail = tail_lines(log_file) if log_file else ""
        where = f"\n--- last lines of {log_file} ---\n{tail}" if log_file else ""
        super().__init__(f"{component}: {reason}{where}")
        self.component = component
        self.log_file = log_file


def tail_lines(path: Path, count: int = LOG_TAIL_LINES) -> str:
    """The last ``count`` lines of a log file ("" if it does not exist)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(data.splitlines()[-count:])


def marker_env(paths: ClusterPaths, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: ours, plus the marker that lets `down` find it later."""
    env = dict(os.environ)
    env[MARKER_ENV] = str(paths.state_dir)
    env.update(extra or {})
    return env


def start_component(
    paths: ClusterPaths,
    component: str,
    argv: list[str],
    extra_env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session with stdout+stderr appended to its log; write its pid."""
    log_file = paths.log_file(component)
    with log_file.open("ab") as log:
        log.write(f"\n=== {time.strftime('%H:%M:%S')} starting: {' '.join(argv)}\n".encode())
        log.flush()
        try:
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=marker_env(paths, extra_env),
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as error:
            raise ComponentFailed(component, f"cannot start {argv[0]}: {error}", None) from error
    paths.pid_file(component).write_text(f"{child.pid}\n")
    return child


def is_alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in {"Z", "X"}


def read_pid(paths: ClusterPaths, component: str) -> int | None:
    """The pid recorded for ``component``, or None."""
    try:
        return int(paths.pid_file(component).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def wait_until_ready(
    component: str,
    child: subprocess.Popen[bytes] | None,
    probe: Callable[[], bool],
    timeout: float,
    log_file: Path,
    *,
    interval: float = 0.1,
) -> None:
    """Poll ``probe`` until true; fail at once if the process exits, loudly at the deadline."""
    deadline = time.monotonic() + timeout
    last_error = ""
    while True:
        if child is not None and child.poll() is not None:
            raise ComponentFailed(component, f"exited with code {child.returncode}", log_file)
        try:
            if probe():
                return
        except Exception as error:
            last_error = f" (last probe error: {type(error).__name__}: {error})"
        if time.monotonic() >= deadline:
            reason = f"not ready after {timeout:.0f}s{last_error}"
            raise ComponentFailed(component, reason, log_file)
        time.sleep(interval)


def _group_alive(pgid: int) -> bool:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, 0)
        return any(_pgid_of(pid) == pgid and is_alive(pid) for pid in _all_pids())
    return False


def _pgid_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _all_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def stop_processes(pids: Iterable[int], grace: float = 10.0) -> list[int]:
    """SIGTERM each pid's process group (or the pid), then SIGKILL what is left after ``grace``.

    Returns the pids that were signalled, so callers can report what they stopped.
    """
    groups: set[int] = set()
    lone: set[int] = set()
    me = os.getpgid(0)
    for pid in pids:
        if pid == os.getpid() or not is_alive(pid):
            continue
        pgid = _pgid_of(pid)
        if pgid is not None and pgid == pid and pgid != me:
            groups.add(pgid)
        else:
            lone.add(pid)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
    for pid in lone:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not any(_group_alive(g) for g in groups) and not any(is_alive(p) for p in lone):
            break
        time.sleep(0.1)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    for pid in lone:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return sorted(groups | lone)


def carries_marker(pid: int, state_dir: Path) -> bool:
    """True if ``pid`` is alive and its environment says it belongs to ``state_dir``'s cluster.

    Checked before signalling any pid from a file: after a reboot a stale pid file may name
    an unrelated process.
    """
    wanted = f"{MARKER_ENV}={state_dir}".encode()
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return wanted in environ.split(b"\0") and is_alive(pid)


def find_marked_processes(state_dir: Path) -> list[int]:
    """Pids of live processes whose environment carries our marker for ``state_dir``.

    This is how `down` finds engine processes of a crashed agent, or components whose pid
    file was lost: every child inherits the marker unless it scrubs its environment.
    """
    me = os.getpid()
    return [pid for pid in _all_pids() if pid != me and carries_marker(pid, state_dir)]
