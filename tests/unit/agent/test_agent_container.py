"""The container runner's state machine with real short processes and a fake clock."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from localcluster.agent.backoff import BackoffPolicy
from localcluster.agent.container import ContainerRunner, RunnerSettings
from localcluster.agent.images import ImageNotFound
from localcluster.agent.objects import ContainerConfigError
from localcluster.agent.probes import ProbeSpec
from localcluster.agent.process import ContainerProcess, spawn

pytestmark = pytest.mark.unit


class Launcher:
    """Runs `python -c <code>` per start; `code` can change between starts."""

    def __init__(self, folder: Path, code: str) -> None:
        self.folder = folder
        self.code = code
        self.starts = 0

    def __call__(self, container: dict[str, Any]) -> ContainerProcess:
        self.starts += 1
        argv = [sys.executable, "-c", self.code]
        return spawn(
            argv, {"PATH": "/usr/bin:/bin"}, self.folder, self.folder / f"{container['name']}.log"
        )


class Prober:
    """Answers probes from a script of results, per probe path."""

    def __init__(self, results: dict[str, list[bool]]) -> None:
        self.results = results

    def __call__(self, spec: ProbeSpec, ports: list[dict[str, Any]]) -> tuple[bool, str]:
        del ports
        queue = self.results[spec.path]
        return (queue.pop(0) if len(queue) > 1 else queue[0]), "scripted"


def settings(policy: str) -> RunnerSettings:
    return RunnerSettings(
        policy, grace_seconds=2.0, backoff=BackoffPolicy(), container_id_prefix="ns_p_u"
    )


def wait_exit(runner: ContainerRunner, now: float) -> None:
    deadline = time.monotonic() + 10
    while runner.process is not None:
        assert time.monotonic() < deadline, "process did not exit"
        runner.tick(now)
        time.sleep(0.01)


def test_failing_container_restarts_with_backoff_and_reports_last_state(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path, "print('boom happened'); raise SystemExit(3)")
    runner = ContainerRunner({"name": "c", "image": "i"}, settings("Always"), launcher, Prober({}))
    runner.tick(0.0)
    wait_exit(runner, 0.0)
    assert launcher.starts == 2  # first restart is immediate
    assert runner.restart_count == 1
    wait_exit(runner, 0.0)
    view = runner.view()
    assert view.state["waiting"]["reason"] == "CrashLoopBackOff"
    assert "back-off 10s" in view.state["waiting"]["message"]
    last = view.last_state["terminated"]
    assert (last["exitCode"], last["reason"]) == (3, "Error")
    assert "boom happened" in last["message"]
    runner.tick(9.9)
    assert launcher.starts == 2
    runner.tick(10.0)
    assert launcher.starts == 3 and runner.restart_count == 2
    assert (tmp_path / "c.previous.log").read_text().strip() == "boom happened"
    wait_exit(runner, 10.0)


def test_never_policy_terminates_for_good(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path, "raise SystemExit(0)")
    runner = ContainerRunner({"name": "c", "image": "i"}, settings("Never"), launcher, Prober({}))
    runner.tick(0.0)
    wait_exit(runner, 0.0)
    runner.tick(1000.0)
    assert launcher.starts == 1
    assert runner.view().state["terminated"]["reason"] == "Completed"
    assert runner.state_record()["exit_code"] == 0


def test_on_failure_policy_does_not_restart_success(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path, "raise SystemExit(0)")
    runner = ContainerRunner(
        {"name": "c", "image": "i"}, settings("OnFailure"), launcher, Prober({})
    )
    runner.tick(0.0)
    wait_exit(runner, 0.0)
    assert runner.succeeded and launcher.starts == 1


def test_startup_then_readiness_then_liveness_restart(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path, "import time; time.sleep(60)")
    spec = {
        "name": "c",
        "image": "i",
        "startupProbe": {"httpGet": {"path": "/s", "port": 1}, "periodSeconds": 1},
        "readinessProbe": {"httpGet": {"path": "/r", "port": 1}, "periodSeconds": 1},
        "livenessProbe": {
            "httpGet": {"path": "/l", "port": 1},
            "periodSeconds": 1,
            "failureThreshold": 2,
        },
    }
    prober = Prober({"/s": [False, True], "/r": [True], "/l": [True]})
    runner = ContainerRunner(spec, settings("Always"), launcher, prober)
    runner.tick(0.0)
    assert runner.process is not None and not runner.started and not runner.ready
    runner.tick(0.0)  # startup fails once
    assert not runner.started
    runner.tick(1.0)  # startup succeeds, readiness succeeds in the same tick
    assert runner.started and runner.ready
    prober.results["/l"] = [False]
    runner.tick(2.0)
    assert runner.process is not None and runner.process.kill_at is None
    runner.tick(3.0)  # second liveness failure: SIGTERM
    assert runner.process is not None and runner.process.kill_at is not None
    assert not runner.ready
    deadline = time.monotonic() + 10
    while launcher.starts < 2:  # SIGTERM ends it; the first restart is immediate
        assert time.monotonic() < deadline, "container was not restarted"
        runner.tick(3.0)
        time.sleep(0.01)
    assert runner.last_terminated is not None and runner.last_terminated["exitCode"] == 143
    assert launcher.starts == 2 and runner.restart_count == 1
    runner.begin_stop(4.0, grace=0.5)
    wait_exit(runner, 10.0)
    assert runner.final is not None


def test_image_and_config_errors_wait_with_kubelet_reasons(tmp_path: Path) -> None:
    errors: list[Exception] = [
        ImageNotFound('image "x" unknown'),
        ImageNotFound('image "x" unknown'),
    ]

    def failing(container: dict[str, Any]) -> ContainerProcess:
        raise errors.pop(0) if errors else ContainerConfigError('configmap "cfg" not found')

    runner = ContainerRunner({"name": "c", "image": "x"}, settings("Always"), failing, Prober({}))
    runner.tick(0.0)
    assert runner.view().state["waiting"]["reason"] == "ErrImagePull"
    runner.tick(10.0)
    assert runner.view().state["waiting"]["reason"] == "ImagePullBackOff"
    runner.tick(20.0)
    waiting = runner.view().state["waiting"]
    assert waiting == {
        "reason": "CreateContainerConfigError",
        "message": 'configmap "cfg" not found',
    }
    del tmp_path
