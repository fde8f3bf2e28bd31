"""One thread per pod: runs its containers, reports status, and tears it down on deletion."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .backoff import BackoffPolicy
from .config import AgentPaths
from .container import ContainerRunner, RunnerSettings
from .ipalloc import PodIPAllocator
from .kubeapi import ApiError, KubeRest
from .launch import LaunchServices, PodLauncher
from .nodes import HOST_IP
from .podreport import PodGone, PodReporter
from .podstatus import PodAddresses, rfc3339
from .probes import ProbeSpec, check
from .promsd import TargetFile

TICK_SECONDS = 0.25
MAX_GRACE_SECONDS = 10.0
SHUTDOWN_GRACE_SECONDS = 3.0
DELETE_RETRY_SECONDS = 1.0
TERMINAL = ("Succeeded", "Failed")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerServices:
    """Shared agent services a pod worker uses."""

    api: KubeRest
    paths: AgentPaths
    ips: PodIPAllocator
    targets: TargetFile
    launch: LaunchServices
    backoff: BackoffPolicy


@dataclass(frozen=True)
class Restored:
    """What an earlier agent run knew about a pod it ran."""

    pod_ip: str


class PodWorker(threading.Thread):
    """Owns a pod's processes from first sight until the pod object is gone."""

    def __init__(
        self,
        pod: dict[str, Any],
        services: WorkerServices,
        on_done: Callable[[str], None],
        restored: Restored | None = None,
    ) -> None:
        meta = pod["metadata"]
        super().__init__(name=f"pod-{meta['namespace']}/{meta['name']}", daemon=True)
        self.uid = str(meta["uid"])
        self.node = str(pod["spec"].get("nodeName", ""))
        self._pod = pod
        self._services = services
        self._on_done = on_done
        self._restored = restored
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._gone = False
        self._shutdown = False
        self._pod_dir = services.paths.pod_dir(meta["namespace"], meta["name"])
        self._inits: list[ContainerRunner] = []
        self._mains: list[ContainerRunner] = []
        self._pod_ip: str | None = None

    # -- signals from the informer and the agent ---------------------------------------
    def update(self, pod: dict[str, Any]) -> None:
        """A newer version of the pod object arrived."""
        with self._lock:
            self._pod = pod
        self._wake.set()

    def vanish(self) -> None:
        """The pod object is gone (force-deleted): kill processes and finish."""
        self._gone = True
        self._wake.set()

    def shutdown(self) -> None:
        """The agent is exiting: kill processes quickly, leave the API object alone."""
        self._shutdown = True
        self._wake.set()

    # -- the loop ------------------------------------------------------------------------
    def run(self) -> None:
        """Set up, then tick until the pod goes; always release the IP and the target.

        A bug must not leave a pod Terminating forever: after a crash the worker kills the
        pod's processes and still completes the pod's deletion when it comes.
        """
        try:
            self._run()
        except Exception:
            log.exception("pod worker %s crashed; killing its processes", self.name)
            self._kill_everything()
            self._services.targets.set(self.uid, None)
            self._finish_after_crash()
        finally:
            if self._pod_ip is not None:
                self._services.launch.network.detach(self._pod_ip)
            self._services.ips.release(self.uid)
            self._services.targets.set(self.uid, None)
            self._on_done(self.uid)

    def _finish_after_crash(self) -> None:
        """Wait for the pod's deletion (or its disappearance) and confirm it with grace 0."""
        while not (self._shutdown or self._gone):
            pod = self._snapshot()
            if pod["metadata"].get("deletionTimestamp"):
                self._delete_until_done(pod)
                return
            self._wake.wait(DELETE_RETRY_SECONDS)
            self._wake.clear()

    def _run(self) -> None:
        pod = self._snapshot()
        pod_ip = self._claim_ip()
        self._pod_ip = pod_ip
        self._services.launch.network.attach(pod_ip)
        status = pod.get("status") or {}
        frozen = status.get("phase") in TERMINAL
        self._launcher = PodLauncher(self._services.launch, self._pod_dir, pod_ip)
        self._inits, self._mains = self._make_runners(pod, status)
        addresses = PodAddresses(pod_ip, HOST_IP, status.get("startTime") or rfc3339())
        self._reporter = PodReporter(
            self._services.api,
            self._services.targets,
            addresses,
            {
                "uid": self.uid,
                "namespace": pod["metadata"]["namespace"],
                "name": pod["metadata"]["name"],
                "node": self.node,
            },
        )
        while True:
            pod = self._snapshot()
            if self._shutdown or self._gone:
                self._stop_all(SHUTDOWN_GRACE_SECONDS if self._shutdown else self._grace(pod))
                return
            if pod["metadata"].get("deletionTimestamp"):
                self._stop_all(self._grace(pod))
                self._confirm_deletion(pod)
                return
            if not frozen:
                self._launcher.pod = pod
                self._tick(time.monotonic())
                try:
                    frozen = self._report(pod) in TERMINAL
                except PodGone:
                    self._gone = True
                    continue
            self._wake.wait(TICK_SECONDS)
            self._wake.clear()

    def _snapshot(self) -> dict[str, Any]:
        with self._lock:
            return self._pod

    def _claim_ip(self) -> str:
        ips = self._services.ips
        if self._restored and ips.reserve(self.uid, self._restored.pod_ip):
            return self._restored.pod_ip
        return ips.allocate(self.uid)

    def _make_runners(
        self, pod: dict[str, Any], status: dict[str, Any]
    ) -> tuple[list[ContainerRunner], list[ContainerRunner]]:
        spec = pod["spec"]
        meta = pod["metadata"]
        settings = RunnerSettings(
            restart_policy=str(spec.get("restartPolicy", "Always")),
            grace_seconds=self._grace(pod),
            backoff=self._services.backoff,
            container_id_prefix=f"{meta['namespace']}_{meta['name']}_{self.uid[:8]}",
            pod_ref=f"{meta['name']}_{meta['namespace']}({self.uid})",
        )
        previous = {
            entry["name"]: int(entry.get("restartCount", 0))
            for entry in (status.get("containerStatuses") or [])
            + (status.get("initContainerStatuses") or [])
        }
        restored = self._restored is not None

        def runner(container: dict[str, Any], is_init: bool) -> ContainerRunner:
            return ContainerRunner(
                container,
                settings,
                self._launch,
                self._probe,
                is_init=is_init,
                restart_count=previous.get(container["name"], 0),
                has_run=restored and container["name"] in previous,
            )

        sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy")]
        inits = [runner(c, True) for c in spec.get("initContainers") or [] if c not in sidecars]
        mains = [runner(c, False) for c in sidecars + list(spec.get("containers") or [])]
        if inits:
            for main in mains:
                main.waiting_reason = "PodInitializing"
        return inits, mains

    def _launch(self, container: dict[str, Any]) -> Any:
        return self._launcher.launch(container)

    def _probe(self, spec: ProbeSpec, ports: list[dict[str, Any]]) -> tuple[bool, str]:
        return check(spec, self._reporter.addresses.pod_ip, ports)

    def _tick(self, now: float) -> None:
        for init in self._inits:
            if init.succeeded:
                continue
            init.tick(now)
            if not init.succeeded:
                return
        for main in self._mains:
            main.tick(now)

    @staticmethod
    def _grace(pod: dict[str, Any]) -> float:
        meta_grace = pod["metadata"].get("deletionGracePeriodSeconds")
        spec_grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
        grace = meta_grace if meta_grace is not None else spec_grace
        return float(min(max(int(grace), 0), MAX_GRACE_SECONDS))

    # -- teardown ------------------------------------------------------------------------
    def _stop_all(self, grace: float) -> None:
        """SIGTERM every container's group, SIGKILL after `grace`, wait until all are gone."""
        runners = self._inits + self._mains
        now = time.monotonic()
        for runner in runners:
            runner.begin_stop(now, grace)
        deadline = now + grace + 5.0
        while any(not r.stopped for r in runners):
            now = time.monotonic()
            if now > deadline:
                log.error("pod %s: processes survived SIGKILL", self.name)
                break
            for runner in runners:
                runner.tick(now)
            time.sleep(0.05)
        self._reporter.withdraw_target()
        self._reporter.save_state(self._inits, self._mains, self._pod_dir)

    def _report(self, pod: dict[str, Any]) -> str:
        return self._reporter.report(pod, self._inits, self._mains, self._pod_dir)

    def _kill_everything(self) -> None:
        """Last resort after a bug: SIGKILL every process group this pod still has."""
        for runner in self._inits + self._mains:
            if runner.process is not None:
                runner.process.signal_group(signal.SIGKILL)

    def _confirm_deletion(self, pod: dict[str, Any]) -> None:
        """Like kubelet: report final status, then delete the object with grace 0."""
        with contextlib.suppress(PodGone):
            self._report(pod)
        self._delete_until_done(pod)

    def _delete_until_done(self, pod: dict[str, Any]) -> None:
        """Retry the final DELETE until it succeeds, the pod is gone, or the agent exits."""
        while not self._shutdown:
            try:
                self._delete_object(pod)
                return
            except Exception:
                log.exception("pod %s: final delete failed; retrying", self.name)
            self._wake.wait(DELETE_RETRY_SECONDS)
            self._wake.clear()
            if self._gone:
                return

    def _delete_object(self, pod: dict[str, Any]) -> None:
        """DELETE with grace 0 and a uid precondition (a same-named successor is spared);
        404 and 409 mean the object is gone already (or is a successor): done too."""
        meta = pod["metadata"]
        try:
            self._services.api.call(
                "DELETE",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                body={
                    "apiVersion": "v1",
                    "kind": "DeleteOptions",
                    "gracePeriodSeconds": 0,
                    "preconditions": {"uid": self.uid},
                },
            )
        except ApiError as error:
            if error.status not in (404, 409):
                raise
