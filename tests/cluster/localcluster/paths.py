"""Where the local cluster keeps its state, so every module agrees on one layout.

Everything lives under ``<repo>/.cluster/`` (gitignored): certificates, etcd data, the agent's
and Prometheus' state, and one ``logs/`` folder a developer can read after a failure.
``SPECDECODE_CLUSTER_DIR`` moves the whole tree, e.g. for a second cluster in a test.
Under pytest-xdist every worker gets a cluster of its own next to it (``.cluster-gw0``,
``.cluster-gw1``): see ``for_worker``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
STATE_DIR_ENV = "SPECDECODE_CLUSTER_DIR"
# Set on every process the harness starts (and inherited by everything they start), so
# `down` can find strays even when pid files are gone: see process.find_marked_processes.
MARKER_ENV = "SPECDECODE_LOCALCLUSTER"


@dataclass(frozen=True)
class ClusterPaths:
    """The file layout of one local cluster, derived from its state directory."""

    state_dir: Path

    @classmethod
    def default(cls) -> ClusterPaths:
        """The repo's cluster, or the one ``SPECDECODE_CLUSTER_DIR`` points at."""
        override = os.environ.get(STATE_DIR_ENV)
        return cls(Path(override).resolve() if override else REPO_ROOT / ".cluster")

    @classmethod
    def for_worker(cls, worker_id: str | None) -> ClusterPaths:
        """The cluster of one pytest-xdist worker (``<default>-gw0``); the default without one.

        Why: two workers on one cluster would share its operator, whose kill and restart
        tests would then hit the other worker's rollouts mid-analysis.
        """
        default = cls.default()
        if not worker_id:
            return default
        return cls(default.state_dir.with_name(f"{default.state_dir.name}-{worker_id}"))

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def pid_dir(self) -> Path:
        return self.state_dir / "pids"

    @property
    def pki_dir(self) -> Path:
        return self.state_dir / "pki"

    @property
    def etcd_data_dir(self) -> Path:
        return self.state_dir / "etcd"

    @property
    def agent_dir(self) -> Path:
        return self.state_dir / "agent"

    @property
    def prometheus_dir(self) -> Path:
        return self.state_dir / "prometheus"

    @property
    def prometheus_sd_file(self) -> Path:
        return self.prometheus_dir / "targets.json"

    @property
    def nodes_file(self) -> Path:
        return self.state_dir / "nodes.json"

    @property
    def state_file(self) -> Path:
        return self.state_dir / "state.json"

    @property
    def env_file(self) -> Path:
        return self.state_dir / "env"

    @property
    def kubeconfig_dir(self) -> Path:
        return self.state_dir / "kubeconfigs"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.kubeconfig_dir / "admin.kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.logs_dir / "audit.log"

    @property
    def audit_policy(self) -> Path:
        return self.state_dir / "audit-policy.yaml"

    def log_file(self, component: str) -> Path:
        """The one log file of ``component`` (stdout and stderr together)."""
        return self.logs_dir / f"{component}.log"

    def pid_file(self, component: str) -> Path:
        return self.pid_dir / f"{component}.pid"

    def ensure(self) -> None:
        """Create the directories every component expects to exist."""
        for directory in (
            self.logs_dir,
            self.pid_dir,
            self.pki_dir,
            self.etcd_data_dir,
            self.agent_dir,
            self.prometheus_dir,
            self.kubeconfig_dir,
        ):
            directory.mkdir(parents=True, exist_ok=True)
