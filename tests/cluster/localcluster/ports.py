"""Free loopback ports for every component, and a loud error when one is taken.

Ports are picked at the start of `up` (the kernel hands out unused ones), so two clusters or
a stray process never collide silently; a component that still cannot bind its port exits,
and the readiness wait reports that with its log.
"""

from __future__ import annotations

import contextlib
import errno
import socket
from collections.abc import Iterable

HOST = "127.0.0.1"


class PortTaken(RuntimeError):
    """A port a component needs is already bound by another process."""


def pick_free_ports(components: Iterable[str]) -> dict[str, int]:
    """One distinct free port per component name (all sockets held until all are picked)."""
    held: list[socket.socket] = []
    ports: dict[str, int] = {}
    try:
        for component in components:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((HOST, 0))
            held.append(sock)
            ports[component] = int(sock.getsockname()[1])
    finally:
        for sock in held:
            sock.close()
    return ports


def ensure_free(port: int, component: str) -> None:
    """Raise PortTaken naming the component if ``port`` cannot be bound on 127.0.0.1."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise PortTaken(
                    f"{component}: port {HOST}:{port} is already taken by another process "
                    f"(see `ss -ltnp 'sport = :{port}'`)"
                ) from error
            raise
