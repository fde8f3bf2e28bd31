"""The kubelet log endpoint serves the agent's log files the way the API server asks."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.agent.kubeletapi import KubeletServer
from localcluster.agent.state import write_state

pytestmark = pytest.mark.unit


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[str]:
    pod_dir = tmp_path / "pods" / "ns" / "p"
    write_state(pod_dir, {"uid": "u", "containers": {"main": {"pid": None}}})
    (pod_dir / "main.log").write_text("a\nb\nc\n")
    (pod_dir / "main.previous.log").write_text("old\n")
    server = KubeletServer(tmp_path)
    server.start()
    yield f"https://127.0.0.1:{server.port}"
    server.shutdown()
    server.server_close()


def get(url: str) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as reply:
            return int(reply.status), reply.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def test_logs_tail_previous_and_follow_of_an_exited_container(kubelet: str) -> None:
    assert get(f"{kubelet}/containerLogs/ns/p/main") == (200, "a\nb\nc\n")
    assert get(f"{kubelet}/containerLogs/ns/p/main?tailLines=1") == (200, "c\n")
    assert get(f"{kubelet}/containerLogs/ns/p/main?previous=true") == (200, "old\n")
    assert get(f"{kubelet}/containerLogs/ns/p/main?follow=true") == (200, "a\nb\nc\n")


def test_unknown_container_and_paths_are_404(kubelet: str) -> None:
    assert get(f"{kubelet}/containerLogs/ns/p/other")[0] == 404
    assert get(f"{kubelet}/exec/ns/p/main")[0] == 404
    assert get(f"{kubelet}/healthz") == (200, "ok")
