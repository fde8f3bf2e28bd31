"""Which TCP peers a process is connected to, read from /proc (Linux).

Why: the instrument's promise is that the operator sends no inference traffic; the e2e
test checks it from the operator process's own sockets rather than from its logs.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

ESTABLISHED = "01"


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # the descriptor closed while we looked
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _address(hex_address: str) -> tuple[str, int]:
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
    else:  # /proc prints IPv6 as four little-endian 32-bit words
        words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
        ip = str(ipaddress.IPv6Address(words).ipv4_mapped or ipaddress.IPv6Address(words))
    return ip, int(port, 16)


def tcp_peers(pid: int) -> set[tuple[str, int]]:
    """(remote ip, remote port) of every established TCP connection the process holds."""
    inodes = _socket_inodes(pid)
    peers: set[tuple[str, int]] = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == ESTABLISHED and fields[9] in inodes:
                peers.add(_address(fields[2]))
    return peers
