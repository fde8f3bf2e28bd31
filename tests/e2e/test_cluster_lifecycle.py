"""Faults of the harness itself: a taken port, a component that exits, a crashed agent.

Each test runs its own cluster in a temporary state directory (never the shared one), and
checks the issue's promise: fail loudly within seconds with the component's last log lines,
and leave no process behind after `down`, even when the agent was killed mid-run.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.binaries import ensure_binaries
from localcluster.handle import LocalCluster
from localcluster.paths import REPO_ROOT, STATE_DIR_ENV, ClusterPaths
from localcluster.process import ComponentFailed, find_marked_processes, is_alive
from localcluster.shutdown import down
from localcluster.startup import up
from localcluster.waiting import wait_for

pytestmark = pytest.mark.e2e

FAIL_FAST_SECONDS = 30.0


def _cli(state_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, STATE_DIR_ENV: str(state_dir)}
    env["PYTHONPATH"] = str(REPO_ROOT / "tests" / "cluster")
    return subprocess.run(
        [sys.executable, "-m", "localcluster", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def private_paths(tmp_path: Path) -> Iterator[ClusterPaths]:
    """A state directory of its own; whatever runs there is stopped afterwards."""
    paths = ClusterPaths(tmp_path / ".cluster")
    yield paths
    down(paths)


def test_taken_port_fails_fast_naming_component_and_port(private_paths: ClusterPaths) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        began = time.monotonic()
        result = _cli(private_paths.state_dir, "up", "--apiserver-port", str(port))
    assert result.returncode == 1
    assert time.monotonic() - began < FAIL_FAST_SECONDS
    assert f"kube-apiserver: port 127.0.0.1:{port} is already taken" in result.stderr
    assert not find_marked_processes(private_paths.state_dir)


def test_component_that_exits_fails_fast_with_its_log(
    private_paths: ClusterPaths, tmp_path: Path
) -> None:
    real = ensure_binaries()
    broken = tmp_path / "bin"
    broken.mkdir()
    for binary in real.iterdir():
        (broken / binary.name).symlink_to(binary)
    (broken / "etcd").unlink()
    (broken / "etcd").write_text("#!/bin/sh\necho 'etcd: cannot open data dir: boom' >&2\nexit 3\n")
    (broken / "etcd").chmod(0o755)
    began = time.monotonic()
    with pytest.raises(ComponentFailed) as failure:
        up(private_paths, bin_dir=broken)
    assert time.monotonic() - began < FAIL_FAST_SECONDS
    message = str(failure.value)
    assert message.startswith("etcd: exited with code 3")
    assert "cannot open data dir: boom" in message


def test_down_after_a_crashed_agent_leaves_no_process(private_paths: ClusterPaths) -> None:
    started = _cli(private_paths.state_dir, "up")
    assert started.returncode == 0, started.stderr
    cluster = LocalCluster.attach(private_paths)
    created = cluster.kubectl(
        "run", "sleeper", "--image=registry.k8s.io/e2e-test-images/agnhost:2.52",
        "--overrides", json.dumps({"spec": {"nodeName": "cpu-0"}}), "--", "pause",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    state_file = private_paths.agent_dir / "pods" / "default" / "sleeper" / "state.json"

    def pod_pid() -> int | None:
        pid = json.loads(state_file.read_text())["containers"]["sleeper"]["pid"]
        return pid if isinstance(pid, int) and is_alive(pid) else None

    pid = wait_for(pod_pid, timeout=60, message="the sleeper pod's process")
    os.kill(cluster.state.pids["agent"], signal.SIGKILL)  # a crash: no cleanup by the agent
    assert is_alive(pid)

    stopped = _cli(private_paths.state_dir, "down")
    assert stopped.returncode == 0, stopped.stderr
    assert not is_alive(pid)
    assert not find_marked_processes(private_paths.state_dir)
    assert not private_paths.state_file.exists()
