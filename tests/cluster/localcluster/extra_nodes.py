"""Extra fake GPU nodes for tests and benchmarks that need more GPUs than the default pool.

The default pool has 28 GPUs; ten analyses (three engines each) or a fleet of idle
rollouts need more. `ExtraGpuNodes` runs a second node agent with its own nodes.json and
state directory: its nodes carry a pool label (`specdecode.dev/pool`) so rollouts can be
pinned to them, and its pods get loopback addresses (no pod network namespace), which is
enough for readiness probes but gives Services no endpoints: for controller tests, not for
traffic. Leaving the context stops the agent (its pods' processes die with it) and deletes
the nodes.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

from localcluster.handle import LocalCluster
from localcluster.nodepool import NodeSpec, write_pool
from localcluster.process import start_component, stop_processes
from localcluster.waiting import wait_for

POOL_KEY = "specdecode.dev/pool"
GPUS_PER_NODE = 8
STANDIN_IMAGE = "ghcr.io/specdecode-operator/engine-standin:bench"


class ExtraGpuNodes:
    """`with ExtraGpuNodes(cluster, gpus, pool="scale") as nodes:` ... `nodes.selector`."""

    def __init__(self, cluster: LocalCluster, gpus: int, pool: str) -> None:
        self.cluster, self.pool = cluster, pool
        self.workdir = Path(tempfile.mkdtemp(prefix=f"nodes-{pool}-"))
        self.agent: subprocess.Popen[bytes] | None = None
        self.names: list[str] = []
        self.resize(gpus)

    @property
    def selector(self) -> dict[str, str]:
        """The nodeSelector that pins pods to these nodes."""
        return {POOL_KEY: self.pool}

    def resize(self, gpus: int) -> None:
        """At least `gpus` GPUs in the pool (restarts the agent with more nodes)."""
        count = math.ceil(gpus / GPUS_PER_NODE)
        if count <= len(self.names):
            return
        if self.agent is not None:
            stop_processes([self.agent.pid])
        labels = {POOL_KEY: self.pool, "nvidia.com/gpu.present": "true"}
        nodes = [
            NodeSpec(f"{self.pool}-gpu-{i}", GPUS_PER_NODE, "fake", labels) for i in range(count)
        ]
        nodes_file = self.workdir / "nodes.json"
        write_pool(nodes_file, nodes)
        argv = [
            sys.executable, "-m", "localcluster.agent",
            "--kubeconfig", str(self.cluster.paths.admin_kubeconfig),
            "--state-dir", str(self.workdir / "agent"),
            "--nodes-config", str(nodes_file),
            "--prometheus-sd-file", str(self.workdir / "targets.json"),
        ]  # fmt: skip
        pythonpath = str(Path(__file__).resolve().parents[1])
        component = f"agent-{self.pool}"
        self.agent = start_component(
            self.cluster.paths, component, argv, extra_env={"PYTHONPATH": pythonpath}
        )
        self.names = [node.name for node in nodes]
        wait_for(self._ready, timeout=120, interval=1, message=f"{count} {self.pool} nodes Ready")

    def _ready(self) -> bool:
        out = self.cluster.kubectl(
            "get", "nodes", "-l", f"{POOL_KEY}={self.pool}", "-o",
            'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
        ).stdout  # fmt: skip
        return out.split().count("True") >= len(self.names)

    def close(self) -> None:
        if self.agent is not None:
            stop_processes([self.agent.pid])
            self.agent = None
        for name in self.names:
            self.cluster.kubectl("delete", "node", name, "--wait=false")
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ExtraGpuNodes:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
