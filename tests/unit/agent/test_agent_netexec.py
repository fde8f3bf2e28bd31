"""The agnhost netexec stand-in answers its endpoints on the address it is given."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

from localcluster.agent.images import TESTIMAGES

pytestmark = pytest.mark.unit


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def netexec() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            str(TESTIMAGES / "netexec.py"),
            "--host",
            "127.0.0.1",
            "--pod-name",
            "web-0",
            f"--http-port={port}",
        ],
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while True:
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=1).read()
            break
        except OSError:
            assert time.monotonic() < deadline, "netexec did not start"
            time.sleep(0.05)
    yield base, process
    process.kill()
    process.wait()


def get(url: str) -> str:
    return str(urllib.request.urlopen(url, timeout=2).read().decode())


def test_endpoints(netexec: tuple[str, subprocess.Popen[bytes]]) -> None:
    base, process = netexec
    assert get(f"{base}/hostname") == "web-0"
    assert get(f"{base}/echo?msg=hi") == "hi"
    metrics = get(f"{base}/metrics")
    assert "# TYPE netexec_requests_total counter" in metrics
    assert get(f"{base}/exit?code=7") == "exiting with 7"
    assert process.wait(timeout=5) == 7
