"""One container's life on the node: start, probes, exit, back-off and restart.

The runner is driven by `tick(now)` from its pod worker, never blocks longer than one probe
timeout, and takes its side effects as callables (launch a process, run a probe check), so
its state machine is testable with fakes and a fake clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .backoff import BackoffPolicy
from .images import ImageNotFound, UnsupportedCommand
from .objects import ContainerConfigError
from .podstatus import ContainerView, rfc3339
from .probes import ProbeSpec, ProbeTracker
from .process import ContainerProcess, tail_text

Launcher = Callable[[dict[str, Any]], ContainerProcess]
Prober = Callable[[ProbeSpec, list[dict[str, Any]]], tuple[bool, str]]
CONFIG_RETRY_SECONDS = 2.0
IMAGE_RETRY_SECONDS = 10.0
START_ERROR_EXIT = 128


@dataclass(frozen=True)
class RunnerSettings:
    """Pod-level facts every container of the pod shares."""

    restart_policy: str
    grace_seconds: float
    backoff: BackoffPolicy
    container_id_prefix: str
    pod_ref: str = ""


class ContainerRunner:
    """Drives one container (main or init) through its states."""

    def __init__(
        self,
        spec: dict[str, Any],
        settings: RunnerSettings,
        launcher: Launcher,
        prober: Prober,
        *,
        is_init: bool = False,
        restart_count: int = 0,
        has_run: bool = False,
    ) -> None:
        self.spec = spec
        self.name = str(spec["name"])
        self._settings = settings
        self._launch = launcher
        self._prober = prober
        self._is_init = is_init
        self.restart_count = restart_count
        self._has_run = has_run
        self.process: ContainerProcess | None = None
        self.waiting_reason = "ContainerCreating" if not has_run else ""
        self.waiting_message = ""
        self._next_attempt = 0.0
        self._image_failures = 0
        self._failures = 0
        self._run_started = 0.0
        self.started_at = ""
        self.started = False
        self.ready = False
        self.last_terminated: dict[str, Any] | None = None
        self.final: dict[str, Any] | None = None
        self._stopping = False
        self._probes: dict[str, ProbeTracker] = {}

    # -- driving -----------------------------------------------------------------------
    def tick(self, now: float) -> None:
        """Advance the state machine: start when due, notice exits, run due probes."""
        if self.process is not None:
            code = self.process.poll()
            if code is not None:
                self._on_exit(code, now)
            else:
                self.process.enforce_deadline(now)
                if self.process.kill_at is None:
                    self._probe(now)
        idle = self.process is None and self.final is None and not self._stopping
        if idle and now >= self._next_attempt:
            self._start(now)

    def begin_stop(self, now: float, grace: float | None = None) -> None:
        """The pod is going away: SIGTERM now, SIGKILL after the grace period, no restart."""
        self._stopping = True
        if self.process is not None:
            wait = self._settings.grace_seconds if grace is None else grace
            self.process.begin_stop(now, wait)

    @property
    def stopped(self) -> bool:
        """No process left (after begin_stop: fully gone)."""
        return self.process is None

    @property
    def succeeded(self) -> bool:
        """Finished for good with exit code 0 (what init containers must reach)."""
        return self.final is not None and self.final["exitCode"] == 0

    # -- transitions -------------------------------------------------------------------
    def _start(self, now: float) -> None:
        try:
            process = self._launch(self.spec)
        except ImageNotFound as error:
            self._image_failures += 1
            first = self._image_failures == 1
            self.waiting_reason = "ErrImagePull" if first else "ImagePullBackOff"
            self.waiting_message = str(error) if first else f"Back-off pulling image: {error}"
            self._next_attempt = now + IMAGE_RETRY_SECONDS * self._settings.backoff.scale
            return
        except ContainerConfigError as error:
            self.waiting_reason, self.waiting_message = "CreateContainerConfigError", str(error)
            self._next_attempt = now + CONFIG_RETRY_SECONDS
            return
        except (UnsupportedCommand, OSError) as error:
            self._record_start_error(now, str(error))
            return
        except Exception as error:
            # Something outside the spec failed (a namespace being deleted refuses new
            # tokens): report it and retry, never crash the pod's worker.
            self.waiting_reason, self.waiting_message = "CreateContainerError", str(error)
            self._next_attempt = now + CONFIG_RETRY_SECONDS
            return
        if self._has_run:
            self.restart_count += 1
        self._has_run = True
        self.process = process
        self._run_started = now
        self.started_at = rfc3339()
        self.waiting_reason, self.waiting_message = "", ""
        self._probes = {
            kind: ProbeTracker(ProbeSpec.from_dict(self.spec[key]), now, ok=(kind == "liveness"))
            for kind, key in (
                ("startup", "startupProbe"),
                ("readiness", "readinessProbe"),
                ("liveness", "livenessProbe"),
            )
            if self.spec.get(key) and not self._is_init
        }
        self.started = "startup" not in self._probes
        self.ready = self.started and "readiness" not in self._probes

    def _record_start_error(self, now: float, message: str) -> None:
        if self._has_run:
            self.restart_count += 1
        self._has_run = True
        self._run_started = now
        self.started_at = rfc3339()
        self._finish(
            {"exitCode": START_ERROR_EXIT, "reason": "StartError", "message": message}, now
        )

    def _on_exit(self, code: int, now: float) -> None:
        assert self.process is not None
        record: dict[str, Any] = {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}
        if code != 0:
            message = tail_text(self.process.log_path)
            if message:
                record["message"] = message
        self.process.reap_group()
        self.process = None
        self._finish(record, now)

    def _finish(self, record: dict[str, Any], now: float) -> None:
        record.update(
            startedAt=self.started_at,
            finishedAt=rfc3339(),
            containerID=self.container_id,
        )
        self.started = self.ready = False
        code = int(record["exitCode"])
        policy = self._settings.restart_policy
        if self._is_init and policy == "Always":
            policy = "OnFailure"
        restart = policy == "Always" or (policy == "OnFailure" and code != 0)
        if self._stopping or not restart:
            self.final = record
            return
        self.last_terminated = record
        healthy_run = self._settings.backoff.resets_after(now - self._run_started)
        self._failures = 1 if healthy_run else self._failures + 1
        delay = self._settings.backoff.delay_before_restart(self._failures)
        self._next_attempt = now + delay
        self.waiting_reason = "CrashLoopBackOff" if delay > 0 else "ContainerCreating"
        self.waiting_message = (
            f"back-off {delay:g}s restarting failed container={self.name} "
            f"pod={self._settings.pod_ref}"
            if delay > 0
            else ""
        )

    def _probe(self, now: float) -> None:
        ports = list(self.spec.get("ports") or [])
        startup = self._probes.get("startup")
        if not self.started and startup is not None:
            if startup.due(now):
                ok, message = self._prober(startup.spec, ports)
                startup.record(ok, now, message)
                if startup.ok:
                    self.started = True
                elif startup.has_failed:
                    self._kill(now)
            if not self.started:
                return
        liveness = self._probes.get("liveness")
        if liveness is not None and liveness.due(now):
            ok, message = self._prober(liveness.spec, ports)
            if not liveness.record(ok, now, message):
                self._kill(now)
                return
        readiness = self._probes.get("readiness")
        if readiness is None:
            self.ready = self.started
        elif readiness.due(now):
            ok, message = self._prober(readiness.spec, ports)
            self.ready = readiness.record(ok, now, message)

    def _kill(self, now: float) -> None:
        """A startup or liveness probe failed for good: stop; the exit path restarts."""
        self.ready = False
        if self.process is not None:
            self.process.begin_stop(now, self._settings.grace_seconds)

    # -- reporting ---------------------------------------------------------------------
    @property
    def container_id(self) -> str:
        """A stable id per run, in kubelet's `<runtime>://<id>` shape."""
        return f"localagent://{self._settings.container_id_prefix}-{self.name}-{self.restart_count}"

    def view(self) -> ContainerView:
        """A snapshot for the pod's status."""
        state: dict[str, Any]
        if self.process is not None:
            state = {"running": {"startedAt": self.started_at}}
        elif self.final is not None:
            state = {"terminated": self.final}
        else:
            waiting: dict[str, Any] = {"reason": self.waiting_reason or "ContainerCreating"}
            if self.waiting_message:
                waiting["message"] = self.waiting_message
            state = {"waiting": waiting}
        last = {"terminated": self.last_terminated} if self.last_terminated else {}
        return ContainerView(
            name=self.name,
            image=str(self.spec.get("image", "")),
            state=state,
            last_state=last,
            ready=self.ready,
            started=self.started,
            restart_count=self.restart_count,
            container_id=self.container_id if self.process or self.final else "",
        )

    def state_record(self) -> dict[str, Any]:
        """The state.json entry tests read: pid, restarts, last exit code, start time."""
        finished = self.final or self.last_terminated
        return {
            "pid": self.process.pid if self.process else None,
            "restarts": self.restart_count,
            "exit_code": finished["exitCode"] if finished else None,
            "started_at": self.started_at or None,
        }
