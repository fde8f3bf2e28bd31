"""Pod status as kubelet reports it, computed from container snapshots (pure).

Phase rules follow kubelet: Pending while init containers or any never-started container
wait; Running while anything runs or will be restarted; Succeeded when every container
exited 0 and none will restart; Failed when a container failed under restartPolicy Never.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


def rfc3339(moment: datetime | None = None) -> str:
    """Kubernetes timestamp format, second precision, UTC."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ContainerView:
    """A snapshot of one container for status reporting."""

    name: str
    image: str
    state: dict[str, Any]
    last_state: dict[str, Any] = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    restart_count: int = 0
    container_id: str = ""

    def as_status(self) -> dict[str, Any]:
        """The containerStatuses entry."""
        status: dict[str, Any] = {
            "name": self.name,
            "image": self.image,
            "imageID": f"localagent://{self.image}",
            "state": self.state,
            "lastState": self.last_state,
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restart_count,
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status

    @property
    def exit_code(self) -> int | None:
        """Exit code if the current state is terminated."""
        terminated = self.state.get("terminated")
        return None if terminated is None else int(terminated["exitCode"])


def pod_phase(restart_policy: str, inits: list[ContainerView], mains: list[ContainerView]) -> str:
    """Kubelet's phase computation, without the 'unknown' state we never have."""
    for init in inits:
        if init.exit_code == 0:
            continue
        if restart_policy == "Never" and init.exit_code is not None:
            return "Failed"
        return "Pending"
    running = stopped = succeeded = waiting = 0
    for view in mains:
        if "running" in view.state:
            running += 1
        elif "terminated" in view.state:
            stopped += 1
            succeeded += view.exit_code == 0
        elif view.last_state.get("terminated"):
            stopped += 1
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if not stopped:
        return "Pending"
    if restart_policy == "Always":
        return "Running"
    if stopped == succeeded:
        return "Succeeded"
    if restart_policy == "Never":
        return "Failed"
    return "Running"


class ConditionClock:
    """Remembers when each condition last changed status, for lastTransitionTime."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, str]] = {}

    def condition(self, kind: str, ok: bool, reason: str = "", message: str = "") -> dict[str, Any]:
        """A pod condition with a stable lastTransitionTime."""
        status = "True" if ok else "False"
        previous = self._seen.get(kind)
        if previous is None or previous[0] != status:
            previous = (status, rfc3339())
            self._seen[kind] = previous
        condition: dict[str, Any] = {
            "type": kind,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": previous[1],
        }
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        return condition


@dataclass(frozen=True)
class PodAddresses:
    """Where the pod lives and when the agent took it on."""

    pod_ip: str
    host_ip: str
    start_time: str


def pod_status(
    restart_policy: str,
    inits: list[ContainerView],
    mains: list[ContainerView],
    addresses: PodAddresses,
    clock: ConditionClock,
) -> dict[str, Any]:
    """The full status body the agent patches onto the pod."""
    phase = pod_phase(restart_policy, inits, mains)
    terminal = phase in ("Succeeded", "Failed")
    pending_inits = [v.name for v in inits if v.exit_code != 0]
    waiting_inits = " ".join(pending_inits)
    unready = [v.name for v in mains if not v.ready]
    initialized = not pending_inits or (terminal and not inits)
    ready = not unready and not terminal
    if terminal:
        ready_reason, ready_message = "PodCompleted", ""
    elif unready:
        ready_reason = "ContainersNotReady"
        ready_message = f"containers with unready status: [{' '.join(unready)}]"
    else:
        ready_reason, ready_message = "", ""
    conditions = [
        clock.condition("PodReadyToStartContainers", not terminal),
        clock.condition(
            "Initialized",
            initialized,
            "" if initialized else "ContainersNotInitialized",
            "" if initialized else f"containers with incomplete status: [{waiting_inits}]",
        ),
        clock.condition("Ready", ready, ready_reason, ready_message),
        clock.condition("ContainersReady", ready, ready_reason, ready_message),
    ]
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": addresses.host_ip,
        "hostIPs": [{"ip": addresses.host_ip}],
        "podIP": addresses.pod_ip,
        "podIPs": [{"ip": addresses.pod_ip}],
        "startTime": addresses.start_time,
        "containerStatuses": [view.as_status() for view in mains],
    }
    if inits:
        status["initContainerStatuses"] = [view.as_status() for view in inits]
    return status
