"""Where pods' processes and IPs live: the cluster's network namespace, or host loopback.

Why a namespace: the API server refuses loopback addresses in EndpointSlices, so pods need
IPs outside 127.0.0.0/8, and those may not go on the host's loopback. The harness makes a
namespace joined to the host by a veth pair (see localcluster/podnetwork.py); here each
pod's IP is added to the namespace side of the veth as a /32 while the pod runs, and every
container process is started through ``nsenter --net=/run/netns/<ns> --``, which execs the
program in place (same pid, same process group, same environment). Probes and Prometheus
stay on the host and reach pod IPs through the veth.

Loopback mode (no namespace: the harness was not root) keeps pods on 127.X.Y.N of the host.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

IP_TIMEOUT_SECONDS = 10.0
log = logging.getLogger(__name__)


class PodNetworkError(Exception):
    """An `ip` command on the pod network failed (the pod cannot get its address)."""


@dataclass(frozen=True)
class HostEndpoints:
    """How a pod reaches services that listen on the host's 127.0.0.1 (through relays)."""

    apiserver_url: str | None = None
    prometheus_url: str | None = None


class LoopbackNetwork:
    """Pods share the host's network; their IPs are host loopback addresses (no setup)."""

    endpoints = HostEndpoints()

    def wrap(self, argv: list[str]) -> list[str]:
        """Loopback pods run as they are."""
        return argv

    def attach(self, address: str) -> None:
        """Nothing to add: all of 127.0.0.0/8 is local already."""
        del address

    def detach(self, address: str) -> None:
        """Nothing to remove."""
        del address

    def reset(self, keep: set[str]) -> None:
        """Nothing left over from an earlier run."""
        del keep


class NamespaceNetwork:
    """Pods live in netns ``name``; their IPs are /32 addresses on ``device`` there."""

    def __init__(self, name: str, device: str, endpoints: HostEndpoints) -> None:
        if not Path("/run/netns", name).exists():
            raise PodNetworkError(f"network namespace {name} does not exist (/run/netns/{name})")
        nsenter = shutil.which("nsenter")
        if nsenter is None:
            raise PodNetworkError("nsenter (util-linux) is needed to start pods in a netns")
        self._name = name
        self._device = device
        self._nsenter = nsenter
        self.endpoints = endpoints

    def wrap(self, argv: list[str]) -> list[str]:
        """nsenter execs ``argv`` inside the namespace, so the pid is the program's own."""
        return [self._nsenter, f"--net=/run/netns/{self._name}", "--", *argv]

    def _ip(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "-n", self._name, *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=IP_TIMEOUT_SECONDS,
        )

    def attach(self, address: str) -> None:
        """Add the pod's IP to the namespace side of the veth (an existing one is fine)."""
        result = self._ip("addr", "add", f"{address}/32", "dev", self._device)
        if result.returncode != 0 and "File exists" not in result.stderr:
            raise PodNetworkError(f"cannot add pod IP {address}: {result.stderr.strip()}")

    def detach(self, address: str) -> None:
        """Remove the pod's IP (a missing one is fine: removal must never block deletion)."""
        result = self._ip("addr", "del", f"{address}/32", "dev", self._device)
        if result.returncode != 0 and "Cannot assign" not in result.stderr:
            log.warning("could not remove pod IP %s: %s", address, result.stderr.strip())

    def reset(self, keep: set[str]) -> None:
        """After a restart: drop pod IPs (/32s) of pods this agent no longer runs."""
        result = self._ip("-j", "-4", "addr", "show", "dev", self._device)
        if result.returncode != 0:
            raise PodNetworkError(f"cannot list pod IPs: {result.stderr.strip()}")
        for interface in json.loads(result.stdout or "[]"):
            for entry in interface.get("addr_info", []):
                if entry.get("prefixlen") == 32 and entry.get("local") not in keep:
                    self.detach(str(entry["local"]))


PodNetwork = LoopbackNetwork | NamespaceNetwork
