"""What a running cluster looks like from outside: ``state.json`` for code, ``env`` for shells.

Why two files: Python (fixtures, benchmarks, the demo) needs ports, pids and URLs without
parsing shell; a developer needs ``source .cluster/env`` to get the built kubectl, the
admin kubeconfig and Prometheus' URL into a shell.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from localcluster.paths import ClusterPaths

COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "agent",
    "prometheus",
    "pod-relay",
)
# Started only with the netns pod network (see podnetwork.py); absent in loopback mode.
OPTIONAL_COMPONENTS = frozenset({"pod-relay"})


@dataclass
class ClusterState:
    """Ports, pids and URLs of one `up`; written once everything is ready."""

    state_dir: str
    bin_dir: str
    kubeconfig: str
    apiserver_url: str
    prometheus_url: str
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    started_at: float = 0.0
    ready_seconds: float = 0.0
    # "netns" (pods in this cluster's network namespace) or "loopback" (the fallback:
    # Services get no endpoints); see podnetwork.py.
    pod_network: str = "loopback"
    pod_network_problem: str = ""
    pod_subnet: str | None = None
    pod_host_address: str | None = None
    pod_netns: str | None = None

    def save(self, paths: ClusterPaths) -> None:
        """Write state.json atomically (readers never see half a file)."""
        partial = paths.state_file.with_suffix(".partial")
        partial.write_text(json.dumps(asdict(self), indent=2) + "\n")
        partial.replace(paths.state_file)

    @classmethod
    def load(cls, paths: ClusterPaths) -> ClusterState | None:
        """The last saved state, or None if the cluster was never (fully) up."""
        try:
            raw = json.loads(paths.state_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in raw.items() if key in known})


def write_env_file(paths: ClusterPaths, state: ClusterState) -> None:
    """``.cluster/env``: `source` it to use the built kubectl/helm against this cluster."""
    exports = {
        "KUBECONFIG": state.kubeconfig,
        "PROMETHEUS_URL": state.prometheus_url,
        "SPECDECODE_CLUSTER_DIR": state.state_dir,
    }
    lines = ["# written by `python -m localcluster up`; source it in a shell"]
    lines += [f"export {key}={shlex.quote(value)}" for key, value in exports.items()]
    lines.append(f'export PATH={shlex.quote(state.bin_dir)}:"$PATH"')
    paths.env_file.write_text("\n".join(lines) + "\n")


def forget(paths: ClusterPaths) -> None:
    """Remove the files that say the cluster is up (after `down`)."""
    for stale in (paths.state_file, paths.env_file):
        stale.unlink(missing_ok=True)
    for pid_file in paths.pid_dir.glob("*.pid") if paths.pid_dir.exists() else []:
        pid_file.unlink(missing_ok=True)


def pid_of(state: ClusterState, component: str) -> int | None:
    """The pid recorded for ``component`` in this state, if any."""
    return state.pids.get(component)


def bin_dir_of(state: ClusterState) -> Path:
    return Path(state.bin_dir)
