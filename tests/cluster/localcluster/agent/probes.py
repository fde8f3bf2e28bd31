"""Container probes: a pure state machine per probe, plus the HTTP/TCP checks themselves.

Kubelet semantics: nothing is probed before `initialDelaySeconds`; then every
`periodSeconds` a check with `timeoutSeconds`; the probe's verdict flips to success after
`successThreshold` consecutive successes and to failure after `failureThreshold`
consecutive failures. Readiness starts as failure, liveness as success, startup as "not
yet". What a verdict does (mark ready, restart) is the container runner's business.
"""

from __future__ import annotations

import http.client
import socket
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProbeSpec:
    """A parsed probe with Kubernetes defaults applied."""

    handler: str  # "httpGet", "tcpSocket", "grpc", "exec"
    port: int | str = 0
    path: str = "/"
    scheme: str = "HTTP"
    host: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3

    @classmethod
    def from_dict(cls, probe: dict[str, Any]) -> ProbeSpec:
        """Parse a pod-spec probe; unknown handlers are kept so the runner can report them."""
        handler = next((h for h in ("httpGet", "tcpSocket", "grpc", "exec") if h in probe), "")
        action = probe.get(handler) or {}
        return cls(
            handler=handler,
            port=action.get("port", 0),
            path=str(action.get("path", "/")),
            scheme=str(action.get("scheme", "HTTP")).upper(),
            host=str(action.get("host", "")),
            headers=tuple(
                (str(h["name"]), str(h["value"])) for h in action.get("httpHeaders") or []
            ),
            initial_delay=float(probe.get("initialDelaySeconds", 0)),
            period=float(probe.get("periodSeconds", 10)),
            timeout=float(probe.get("timeoutSeconds", 1)),
            success_threshold=int(probe.get("successThreshold", 1)),
            failure_threshold=int(probe.get("failureThreshold", 3)),
        )


@dataclass
class ProbeTracker:
    """Consecutive-result counting for one probe over one run of a container."""

    spec: ProbeSpec
    started_at: float
    ok: bool
    next_due: float = field(init=False)
    _streak_value: bool | None = field(default=None, init=False)
    _streak: int = field(default=0, init=False)
    last_message: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.next_due = self.started_at + self.spec.initial_delay

    def due(self, now: float) -> bool:
        """True when the next check should run."""
        return now >= self.next_due

    def record(self, success: bool, now: float, message: str = "") -> bool:
        """Feed one check result; return the (possibly flipped) verdict."""
        self.next_due = now + self.spec.period
        self.last_message = message
        if success == self._streak_value:
            self._streak += 1
        else:
            self._streak_value, self._streak = success, 1
        needed = self.spec.success_threshold if success else self.spec.failure_threshold
        if self._streak >= needed:
            self.ok = success
        return self.ok

    @property
    def has_failed(self) -> bool:
        """True once `failureThreshold` consecutive checks have failed."""
        return self._streak_value is False and self._streak >= self.spec.failure_threshold


def resolve_port(port: int | str, container_ports: list[dict[str, Any]]) -> int | None:
    """A probe's port: a number, a numeric string, or the name of a container port."""
    if isinstance(port, int):
        return port
    if port.isdigit():
        return int(port)
    for entry in container_ports:
        if entry.get("name") == port:
            return int(entry["containerPort"])
    return None


def check(spec: ProbeSpec, pod_ip: str, container_ports: list[dict[str, Any]]) -> tuple[bool, str]:
    """Run one check against the pod's address; return (success, message for events)."""
    if spec.handler == "exec":
        return True, "exec probes are not run by the local agent; treated as success"
    port = resolve_port(spec.port, container_ports)
    if port is None:
        return False, f"probe port {spec.port!r} names no container port"
    host = spec.host or pod_ip
    try:
        if spec.handler == "httpGet":
            return _http_get(spec, host, port)
        with socket.create_connection((host, port), timeout=spec.timeout):
            return True, ""
    except OSError as error:
        return False, f"{spec.handler} {host}:{port}: {error}"


def _http_get(spec: ProbeSpec, host: str, port: int) -> tuple[bool, str]:
    connection: http.client.HTTPConnection
    if spec.scheme == "HTTPS":
        import ssl

        context = ssl._create_unverified_context()  # kubelet does not verify either
        connection = http.client.HTTPSConnection(host, port, timeout=spec.timeout, context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=spec.timeout)
    try:
        headers = {"User-Agent": "kube-probe/1.34", "Accept": "*/*", **dict(spec.headers)}
        connection.request("GET", spec.path, headers=headers)
        response = connection.getresponse()
        response.read(10240)
        if 200 <= response.status < 400:
            return True, ""
        return False, f"HTTP probe failed with statuscode: {response.status}"
    finally:
        connection.close()
