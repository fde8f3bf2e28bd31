"""Container processes: spawn in their own process group with the log captured, signal the
whole group, and find our own strays again by an environment marker after a restart."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

POD_UID_ENV = "SPECDECODE_AGENT_POD_UID"
KILL_EXIT_BASE = 128


def rotate_log(log_path: Path) -> None:
    """Keep the previous run's log as `<container>.previous.log`, like `kubectl logs -p`."""
    if log_path.exists():
        os.replace(log_path, log_path.with_name(log_path.stem + ".previous.log"))


def tail_text(path: Path, max_lines: int = 80, max_bytes: int = 2048) -> str:
    """The last lines of a log, bounded like kubelet's FallbackToLogsOnError message."""
    try:
        with path.open("rb") as stream:
            stream.seek(0, os.SEEK_END)
            size = stream.tell()
            stream.seek(max(0, size - max_bytes))
            data = stream.read()
    except FileNotFoundError:
        return ""
    lines = data.decode("utf-8", errors="replace").splitlines()
    if size > max_bytes and lines:
        lines = lines[1:]  # drop the partial first line
    return "\n".join(lines[-max_lines:])


def normalise_exit(code: int) -> int:
    """Popen reports death by signal N as -N; a container runtime reports 128+N."""
    return KILL_EXIT_BASE - code if code < 0 else code


@dataclass
class ContainerProcess:
    """A running (or finished) container process and its stop deadline."""

    popen: subprocess.Popen[bytes]
    log_path: Path
    kill_at: float | None = field(default=None)

    @property
    def pid(self) -> int:
        """Process id, also the process group id (each container gets its own session)."""
        return self.popen.pid

    def poll(self) -> int | None:
        """Exit code (128+signal for signals) once the process has ended."""
        code = self.popen.poll()
        return None if code is None else normalise_exit(code)

    def signal_group(self, signum: int) -> None:
        """Signal the whole process group, so children of shells die too."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def begin_stop(self, now: float, grace: float) -> None:
        """SIGTERM now; `enforce_deadline` sends SIGKILL once `grace` seconds have passed."""
        if self.kill_at is None:
            self.signal_group(signal.SIGTERM)
            self.kill_at = now + grace

    def enforce_deadline(self, now: float) -> None:
        """SIGKILL the group if a stop was requested and its grace period is over."""
        if self.kill_at is not None and now >= self.kill_at:
            self.signal_group(signal.SIGKILL)

    def reap_group(self) -> None:
        """After the leader exited, kill anything left in its group (stray children)."""
        self.signal_group(signal.SIGKILL)


def spawn(argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> ContainerProcess:
    """Start a container process in a new session with stdout and stderr into its log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    rotate_log(log_path)
    with log_path.open("wb") as log:
        popen = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return ContainerProcess(popen=popen, log_path=log_path)


def is_ours(pid: int, pod_uid: str) -> bool:
    """True if `pid` is alive and was started by the agent for this pod (env marker)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{POD_UID_ENV}={pod_uid}".encode() in environ.split(b"\0")


def kill_stray_group(pid: int, pod_uid: str) -> bool:
    """SIGKILL a leftover process group from an earlier agent run, if it is really ours."""
    if not is_ours(pid, pod_uid):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)  # wait for the kernel to close its sockets before a restart
    return True


def _alive(pid: int) -> bool:
    """Running and not a zombie (an orphan's zombie may linger until init reaps it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"
