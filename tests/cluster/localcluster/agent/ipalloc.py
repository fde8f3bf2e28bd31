"""Pod IP allocation: one address per live pod from the pod subnet.

With the harness' pod network namespace the subnet is its `10.244.<n>.0/24`: .1 is the
host side of the veth and the namespace side's own address is reserved too, so pods get
.2 to .253. In loopback mode (the fallback) every agent on the machine shares the loopback
device, so two clusters must not hand out the same addresses: the subnet is
`127.X.Y.0/24` with X and Y derived from the agent's state directory. The subnet's first
host (.1) is never given to a pod.
"""

from __future__ import annotations

import hashlib
import ipaddress
import socket
import threading
from pathlib import Path

DEFAULT_POD_SUBNET = "127.0.0.0/24"


def subnet_for(state_dir: Path) -> str:
    """A stable /24 in 127.1.0.0 - 127.254.255.0 for this state directory."""
    digest = hashlib.sha256(str(state_dir.resolve()).encode()).digest()
    return f"127.{1 + digest[0] % 254}.{digest[1]}.0/24"


class AddressesExhausted(Exception):
    """Every address of the pod subnet is taken by a live pod."""


class PodIPAllocator:
    """Hands out addresses per pod UID; thread-safe because pod workers run in threads.

    Allocation picks the next free address after the last one handed out, so a freed
    address is not reused at once (fewer surprises for a client still talking to it).
    """

    def __init__(self, subnet: str = DEFAULT_POD_SUBNET, reserved: tuple[str, ...] = ()) -> None:
        network = ipaddress.IPv4Network(subnet)
        hosts = [str(host) for host in list(network.hosts())[1:]]
        self._addresses = [address for address in hosts if address not in reserved]
        if not self._addresses:
            raise ValueError(f"pod subnet {subnet} has no room for pods")
        self._by_owner: dict[str, str] = {}
        self._cursor = -1
        self._lock = threading.Lock()

    @property
    def first_address(self) -> str:
        """The first address pods get (used to check the subnet is bindable)."""
        return self._addresses[0]

    def allocate(self, owner: str) -> str:
        """Return the owner's address, allocating one on first call."""
        with self._lock:
            if owner in self._by_owner:
                return self._by_owner[owner]
            taken = set(self._by_owner.values())
            span = len(self._addresses)
            for step in range(1, span + 1):
                index = (self._cursor + step) % span
                address = self._addresses[index]
                if address not in taken:
                    self._cursor = index
                    self._by_owner[owner] = address
                    return address
            raise AddressesExhausted(f"all {span} pod addresses are in use")

    def reserve(self, owner: str, address: str) -> bool:
        """Claim a specific address (after an agent restart); False if another owner has it."""
        with self._lock:
            if address not in self._addresses:
                return False
            holder = next((o for o, a in self._by_owner.items() if a == address), None)
            if holder not in (None, owner):
                return False
            self._by_owner[owner] = address
            return True

    def release(self, owner: str) -> None:
        """Free the owner's address, if any."""
        with self._lock:
            self._by_owner.pop(owner, None)

    def in_use(self) -> dict[str, str]:
        """A copy of owner -> address, for tests and diagnostics."""
        with self._lock:
            return dict(self._by_owner)


def check_bindable(address: str) -> None:
    """Fail loudly at start if pods could not listen on the subnet's addresses."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError as error:
            raise SystemExit(
                f"pod address {address} is not local ({error}); without a pod network "
                f"namespace (--netns) the pod subnet must be in 127.0.0.0/8"
            ) from error
