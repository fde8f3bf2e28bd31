"""Runs specdecode-operator as a local process against the local cluster (tests and demo).

The operator runs exactly as it would anywhere outside a pod: the console script, a
kubeconfig, a Prometheus URL. Tests can kill it mid-analysis and start it again to prove
that all progress lives in the resource's status.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from localcluster.handle import LocalCluster
from localcluster.ports import pick_free_ports
from localcluster.process import ComponentFailed, start_component, stop_processes, wait_until_ready
from localcluster.waiting import wait_for

REPO = Path(__file__).resolve().parents[3]
CRD_FILES = tuple(sorted((REPO / "crds").glob("specdecode.io_*.yaml")))
CRD_NAMES = ("specdecoderollouts.specdecode.io", "specdecodetunings.specdecode.io")
CRD_NAME = CRD_NAMES[0]  # the rollout's
COMPONENT = "operator"


def install_crds(cluster: LocalCluster, timeout: float = 60.0) -> None:
    """Apply the generated CRDs and wait until the API server serves them."""
    for crd_file in CRD_FILES:
        result = cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd_file))
        if result.returncode != 0:
            raise RuntimeError(f"applying {crd_file.name} failed: {result.stderr.strip()}")
    for name in CRD_NAMES:
        wait_for(
            functools.partial(_established, cluster, name),
            timeout=timeout,
            message=f"CRD {name} Established",
        )


def _established(cluster: LocalCluster, name: str) -> bool:
    """Whether the API server serves the CRD `name`."""
    waited = cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=5s")
    return waited.returncode == 0


@dataclass
class OperatorProcess:
    """One running operator; `restart()` replaces it with a fresh process."""

    cluster: LocalCluster
    reconcile_interval: float = 1.0
    child: subprocess.Popen[bytes] | None = None
    metrics_port: int = 0
    health_port: int = 0

    @property
    def log_file(self) -> Path:
        """Where the operator's output goes (appended across restarts)."""
        return self.cluster.paths.log_file(COMPONENT)

    def start(self, timeout: float = 60.0) -> OperatorProcess:
        """Start the operator and wait until kopf reports itself alive."""
        ports = pick_free_ports(["operator-metrics", "operator-health"])
        self.metrics_port, self.health_port = ports["operator-metrics"], ports["operator-health"]
        executable = shutil.which("specdecode-operator", path=str(Path(sys.executable).parent))
        argv = [
            executable or "specdecode-operator",
            "--kubeconfig",
            str(self.cluster.kubeconfig),
            "--prometheus-url",
            self.cluster.prometheus_url,
            "--reconcile-interval",
            str(self.reconcile_interval),
            "--metrics-port",
            str(self.metrics_port),
        ]
        env = {
            "SPECDECODE_METRICS_HOST": "127.0.0.1",
            "SPECDECODE_LIVENESS_ENDPOINT": f"http://127.0.0.1:{self.health_port}/healthz",
            # the local Prometheus scrapes every second (localcluster.prometheus)
            "SPECDECODE_ENGINE_SCRAPE_INTERVAL_SECONDS": "1",
        }
        self.child = start_component(self.cluster.paths, COMPONENT, argv, extra_env=env)
        wait_until_ready(COMPONENT, self.child, self._alive, timeout, self.log_file)
        return self

    def _alive(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/healthz", timeout=2):
            return True

    def metrics_text(self) -> str:
        """The operator's own /metrics exposition."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as reply:
            text: str = reply.read().decode()
            return text

    def kill(self) -> None:
        """SIGKILL, as a crashed node or OOM kill would: no graceful cleanup at all."""
        if self.child is not None and self.child.poll() is None:
            self.child.kill()
            self.child.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM with a deadline, then SIGKILL."""
        if self.child is not None and self.child.poll() is None:
            stop_processes([self.child.pid], grace=10.0)
            self.child.wait(timeout=10)

    def restart(self) -> OperatorProcess:
        """Kill the process and start a fresh one."""
        self.kill()
        return self.start()

    def assert_running(self) -> None:
        """Fail with the operator's last log lines if it exited."""
        if self.child is None or self.child.poll() is not None:
            code = None if self.child is None else self.child.returncode
            raise ComponentFailed(COMPONENT, f"exited with code {code}", self.log_file)
