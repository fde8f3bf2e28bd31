"""The pod network: a network namespace of this cluster's own, joined to the host by a veth.

Why: the API server refuses loopback addresses in EndpointSlices ("may not be in the
loopback range"), so pods on 127.X.Y.N never show up behind a Service, and private-range
addresses may not be put on the host's loopback. So `up` (as root) makes, per cluster:

    host                                    netns sdpods-<6hex>
    sd<6hex>h 10.244.<n>.1/24  <== veth ==>  sd<6hex>p 10.244.<n>.254/24 (+ one /32 per pod)
                                             lo up, default route via 10.244.<n>.1

Names and ``n`` come from a hash of the state directory, so two clusters on one machine get
different namespaces and subnets (if another cluster already has that /24, the next free
one is used; state.json records the subnet in use; a machine-wide lock file keeps two
clusters starting at once, e.g. two pytest-xdist workers, from taking the same free /24).
The node agent adds each pod's IP to the namespace side and runs the pod's processes
inside the namespace (``nsenter --net``); probes and Prometheus on the host reach pod IPs
through the veth. Pods reach the API server and Prometheus (which listen on 127.0.0.1)
through small relays on the host address (see relay.py).

Without root, or if ``ip netns add`` fails, the cluster falls back to loopback pod IPs and
`up` warns that Services will have no endpoints. `down` deletes the namespace and the veth
pair; `up` first removes whatever a crashed run left behind.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from localcluster.locking import file_lock

NETNS_MODE = "netns"
LOOPBACK_MODE = "loopback"
NAMESPACE_ADDRESS_HOST = 254  # the namespace side's own address; pods get .2 to .253
IP_TIMEOUT_SECONDS = 10.0
# Set (e.g. in CI) to make `up` fail instead of falling back to loopback pod IPs.
REQUIRE_NETNS_ENV = "SPECDECODE_REQUIRE_POD_NETNS"
# Held while a cluster picks its /24 and puts it on its veth (root only, like the netns).
SUBNET_LOCK = Path(tempfile.gettempdir()) / "specdecode-podnetwork.lock"


class PodNetworkUnavailable(RuntimeError):
    """The netns pod network could not be made and REQUIRE_NETNS_ENV forbids the fallback."""


@dataclass(frozen=True)
class PodNetworkPlan:
    """Names and addresses of one cluster's pod network (derived, nothing created yet)."""

    netns: str
    host_device: str
    pod_device: str
    subnet: str
    host_address: str
    namespace_address: str

    @classmethod
    def for_state_dir(cls, state_dir: Path) -> PodNetworkPlan:
        """Stable names (interface names stay within Linux' 15 characters) and a /24."""
        digest = hashlib.sha256(str(state_dir.resolve()).encode()).digest()
        tag = digest[:3].hex()
        prefix = f"10.244.{digest[3]}"
        return cls(
            netns=f"sdpods-{tag}",
            host_device=f"sd{tag}h",
            pod_device=f"sd{tag}p",
            subnet=f"{prefix}.0/24",
            host_address=f"{prefix}.1",
            namespace_address=f"{prefix}.{NAMESPACE_ADDRESS_HOST}",
        )

    def next_subnet(self) -> PodNetworkPlan:
        """The same names with the following /24 (when another cluster has this one)."""
        third_octet = int(self.subnet.split(".")[2]) + 1
        prefix = f"10.244.{third_octet % 256}"
        return replace(
            self,
            subnet=f"{prefix}.0/24",
            host_address=f"{prefix}.1",
            namespace_address=f"{prefix}.{NAMESPACE_ADDRESS_HOST}",
        )


@dataclass(frozen=True)
class PodNetworkOutcome:
    """What `up` got: the netns network, or loopback and why."""

    mode: str
    plan: PodNetworkPlan
    problem: str = ""


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", *args], capture_output=True, text=True, check=False, timeout=IP_TIMEOUT_SECONDS
    )


def _setup_commands(plan: PodNetworkPlan) -> list[list[str]]:
    ns = plan.netns
    return [
        ["netns", "add", ns],
        ["link", "add", plan.host_device, "type", "veth", "peer", "name", plan.pod_device],
        ["link", "set", plan.pod_device, "netns", ns],
        ["addr", "add", f"{plan.host_address}/24", "dev", plan.host_device],
        ["link", "set", plan.host_device, "up"],
        ["-n", ns, "link", "set", "lo", "up"],
        ["-n", ns, "addr", "add", f"{plan.namespace_address}/24", "dev", plan.pod_device],
        ["-n", ns, "link", "set", plan.pod_device, "up"],
        ["-n", ns, "route", "add", "default", "via", plan.host_address],
    ]


def _subnets_in_use() -> set[ipaddress.IPv4Network]:
    """The /24s of every IPv4 address on the host (another cluster's veth among them)."""
    shown = _ip("-j", "-4", "addr", "show")
    if shown.returncode != 0:
        return set()
    return {
        ipaddress.IPv4Interface(f"{entry['local']}/24").network
        for interface in json.loads(shown.stdout or "[]")
        for entry in interface.get("addr_info", [])
    }


def create(plan: PodNetworkPlan) -> PodNetworkOutcome:
    """Make the namespace and veth pair (after removing leftovers); loopback on failure."""
    if os.geteuid() != 0:
        return PodNetworkOutcome(LOOPBACK_MODE, plan, "not root (ip netns add needs root)")
    with file_lock(SUBNET_LOCK):
        return _create_locked(plan)


def _create_locked(plan: PodNetworkPlan) -> PodNetworkOutcome:
    remove(plan)
    in_use = _subnets_in_use()
    for _ in range(256):
        if ipaddress.IPv4Network(plan.subnet) not in in_use:
            break
        plan = plan.next_subnet()
    for command in _setup_commands(plan):
        try:
            result = _ip(*command)
        except (OSError, subprocess.TimeoutExpired) as error:
            remove(plan)
            return PodNetworkOutcome(LOOPBACK_MODE, plan, f"`ip {' '.join(command)}`: {error}")
        if result.returncode != 0:
            remove(plan)
            problem = f"`ip {' '.join(command)}` failed: {result.stderr.strip()}"
            return PodNetworkOutcome(LOOPBACK_MODE, plan, problem)
    return PodNetworkOutcome(NETNS_MODE, plan)


def remove(plan: PodNetworkPlan) -> None:
    """Delete the namespace (its veth end and with it the pair) and the host end; idempotent."""
    try:
        _ip("netns", "delete", plan.netns)
        _ip("link", "delete", plan.host_device)
    except (OSError, subprocess.TimeoutExpired):
        pass  # no iproute2 or no permission: then nothing was created either


def exists(plan: PodNetworkPlan) -> bool:
    """True if the namespace is there (``ip netns add`` makes /run/netns/<name>)."""
    return Path("/run/netns", plan.netns).exists()


def agent_arguments(outcome: PodNetworkOutcome, prometheus_port: int) -> list[str]:
    """What the node agent needs to put pods into the namespace (nothing in loopback mode)."""
    if outcome.mode != NETNS_MODE:
        return []
    plan = outcome.plan
    return [
        "--netns", plan.netns,
        "--netns-device", plan.pod_device,
        "--pod-subnet", plan.subnet,
        "--gateway", plan.host_address,
        "--reserved-address", plan.namespace_address,
        "--prometheus-port", str(prometheus_port),
    ]  # fmt: skip


def require_netns(outcome: PodNetworkOutcome) -> None:
    """Raise PodNetworkUnavailable for a loopback fallback when REQUIRE_NETNS_ENV is set."""
    required = os.environ.get(REQUIRE_NETNS_ENV, "") not in {"", "0", "false", "no"}
    if required and outcome.mode != NETNS_MODE:
        raise PodNetworkUnavailable(f"no pod network namespace: {outcome.problem}")


def loopback_warning(problem: str) -> str:
    """The warning `up` prints when it has to fall back to loopback pod IPs."""
    return (
        f"WARNING: no pod network namespace ({problem}); pods get loopback IPs, which the "
        "API server refuses in EndpointSlices: Services will have NO endpoints and "
        "EndpointSlice-dependent tests will fail. Run `up` as root to get the netns pod network."
    )
