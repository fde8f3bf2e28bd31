"""Runs localcluster.gateway (the one-route data plane) as a child process of a test.

Why a process, not a thread: the gateway is an asyncio server with its own event loop and
blocking Kubernetes calls, like a real data plane beside the test; as a marked component it
logs to ``.cluster/logs/gateway-<namespace>-<route>.log`` and `down` stops it if a test
run leaks it. Readiness is a condition, never a sleep: its stats endpoint answers after a
first read of the cluster.

    with running_gateway(cluster, namespace, "chat") as gateway:
        httpx.post(f"{gateway.url}/v1/chat/completions", json=...)
        gateway.stats()["mirrors"]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.handle import LocalCluster
from localcluster.paths import REPO_ROOT
from localcluster.ports import pick_free_ports
from localcluster.process import ComponentFailed, start_component, stop_processes, wait_until_ready
from localcluster.waiting import wait_for

STATS_PATH = "/_gateway/stats"


@dataclass
class GatewayProcess:
    """One gateway for HTTPRoute ``namespace/route``; ``url`` is where clients send requests."""

    cluster: LocalCluster
    namespace: str
    route: str
    refresh_interval: float = 0.5
    mirror_limit: int = 64
    seed: int | None = None
    child: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def component(self) -> str:
        return f"gateway-{self.namespace}-{self.route}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.cluster.paths.log_file(self.component)

    def start(self, timeout: float = 30.0) -> GatewayProcess:
        """Start it on a free port; return once it has read the cluster once."""
        self.port = pick_free_ports([self.component])[self.component]
        argv = [
            sys.executable, "-m", "localcluster.gateway",
            "--kubeconfig", str(self.cluster.kubeconfig),
            "--namespace", self.namespace, "--route", self.route,
            "--port", str(self.port),
            "--refresh-interval", str(self.refresh_interval),
            "--mirror-limit", str(self.mirror_limit),
            *(["--seed", str(self.seed)] if self.seed is not None else []),
        ]  # fmt: skip
        pythonpath = os.pathsep.join(
            filter(None, [str(REPO_ROOT / "tests" / "cluster"), os.environ.get("PYTHONPATH")])
        )
        self.child = start_component(
            self.cluster.paths, self.component, argv, {"PYTHONPATH": pythonpath}
        )
        try:
            wait_until_ready(self.component, self.child, lambda: self.stats()["refreshes"] > 0,
                             timeout, self.log_file)  # fmt: skip
        except BaseException:
            self.stop()
            raise
        return self

    def stats(self) -> dict[str, Any]:
        """The gateway's counters (see localcluster.gateway.Gateway.snapshot)."""
        with urllib.request.urlopen(f"{self.url}{STATS_PATH}", timeout=5) as reply:
            stats: dict[str, Any] = json.loads(reply.read())
            return stats

    def wait_until(
        self, condition: Callable[[dict[str, Any]], bool], message: str, timeout: float = 30.0
    ) -> dict[str, Any]:
        """Poll the stats until ``condition(stats)`` holds; those stats. Fails if it died."""

        def check() -> dict[str, Any] | None:
            self.assert_running()
            stats = self.stats()
            return stats if condition(stats) else None

        result: dict[str, Any] = wait_for(check, timeout=timeout, message=message)
        return result

    def wait_for_route(self, generation: int, timeout: float = 30.0) -> dict[str, Any]:
        """Stats once the gateway routes with ``generation`` (or newer) of its HTTPRoute."""
        return self.wait_until(
            lambda s: s["route"] is not None and s["route"]["generation"] >= generation,
            f"gateway {self.component} to see route generation {generation}",
            timeout,
        )

    def assert_running(self) -> None:
        """Raise ComponentFailed with the last log lines if the process exited."""
        if self.child is None or self.child.poll() is not None:
            code = None if self.child is None else self.child.returncode
            raise ComponentFailed(self.component, f"exited with code {code}", self.log_file)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period."""
        if self.child is not None and self.child.poll() is None:
            stop_processes([self.child.pid], grace=5.0)
            self.child.wait(timeout=10)
        self.cluster.paths.pid_file(self.component).unlink(missing_ok=True)


@contextmanager
def running_gateway(
    cluster: LocalCluster, namespace: str, route: str, **options: Any
) -> Iterator[GatewayProcess]:
    """A started gateway for ``namespace/route`` (options: GatewayProcess fields), stopped after."""
    gateway = GatewayProcess(cluster, namespace, route, **options).start()
    try:
        yield gateway
    finally:
        gateway.stop()
