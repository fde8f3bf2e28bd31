"""A running local cluster as tests and scripts see it: kubeconfig, kubectl, Prometheus.

Why a handle: e2e tests, the demo and benchmarks all need the same few things (run the
built kubectl as admin, mint a ServiceAccount kubeconfig, find logs and the audit log,
stop and restart Prometheus to test its absence) without knowing the file layout.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster import kubeconfig, prometheus
from localcluster.paths import ClusterPaths
from localcluster.process import carries_marker, read_pid, stop_processes, wait_until_ready
from localcluster.state import ClusterState

KUBECTL_TIMEOUT = 120.0


@dataclass(frozen=True)
class LocalCluster:
    """A cluster that `up` started (state.json exists)."""

    paths: ClusterPaths
    state: ClusterState

    @classmethod
    def attach(cls, paths: ClusterPaths | None = None) -> LocalCluster:
        """The running cluster of ``paths`` (default: the repo's); fails if it is not up."""
        paths = paths or ClusterPaths.default()
        state = ClusterState.load(paths)
        if state is None:
            raise RuntimeError(f"no cluster state in {paths.state_file}: run localcluster up")
        return cls(paths, state)

    @property
    def kubeconfig(self) -> Path:
        return Path(self.state.kubeconfig)

    @property
    def bin_dir(self) -> Path:
        return Path(self.state.bin_dir)

    @property
    def apiserver_url(self) -> str:
        return self.state.apiserver_url

    @property
    def prometheus_url(self) -> str:
        return self.state.prometheus_url

    @property
    def state_dir(self) -> Path:
        return self.paths.state_dir

    @property
    def logs_dir(self) -> Path:
        return self.paths.logs_dir

    @property
    def audit_log(self) -> Path:
        return self.paths.audit_log

    @property
    def agent_dir(self) -> Path:
        return self.paths.agent_dir

    def env(self, kubeconfig_file: Path | None = None) -> dict[str, str]:
        """os.environ with the built binaries first on PATH and KUBECONFIG set."""
        env = dict(os.environ)
        env["PATH"] = f"{self.bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
        env["KUBECONFIG"] = str(kubeconfig_file or self.kubeconfig)
        env["PROMETHEUS_URL"] = self.prometheus_url
        return env

    def _run(
        self, tool: str, args: tuple[str, ...], **options: Any
    ) -> subprocess.CompletedProcess[str]:
        kubeconfig_file = options.pop("kubeconfig", None)
        return subprocess.run(
            [str(self.bin_dir / tool), *args],
            env=self.env(kubeconfig_file),
            capture_output=True,
            text=True,
            timeout=options.pop("timeout", KUBECTL_TIMEOUT),
            check=options.pop("check", False),
            **options,
        )

    def kubectl(self, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl as admin (or ``kubeconfig=...``); never raises on exit code
        unless ``check=True``; ``input=`` feeds stdin (e.g. a manifest for ``apply -f -``)."""
        return self._run("kubectl", args, **options)

    def helm(self, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """Run the built helm against this cluster, like ``kubectl``."""
        return self._run("helm", args, **options)

    def kubeconfig_for_service_account(self, namespace: str, name: str) -> Path:
        """A kubeconfig authenticating as ServiceAccount ``namespace/name`` (TokenRequest)."""
        return kubeconfig.kubeconfig_for_service_account(
            self.paths, self.apiserver_url, namespace, name
        )

    def stop_prometheus(self) -> None:
        """Stop Prometheus (tests of "metrics unavailable"); start_prometheus brings it back."""
        pid = read_pid(self.paths, prometheus.COMPONENT)
        if pid is not None and carries_marker(pid, self.paths.state_dir):
            stop_processes([pid])

    def start_prometheus(self, timeout: float = 30.0) -> None:
        """Start Prometheus again on its original port and wait until it is ready."""
        port = self.state.ports["prometheus"]
        child = prometheus.start(self.paths, port)
        wait_until_ready(
            prometheus.COMPONENT,
            child,
            lambda: prometheus.ready(port),
            timeout,
            self.paths.log_file(prometheus.COMPONENT),
        )
        self.state.pids[prometheus.COMPONENT] = child.pid
        self.state.save(self.paths)

    def prometheus_query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """Instant query (now, or at unix time `at`); the ``data.result`` list of
        Prometheus' HTTP API."""
        import json
        import urllib.parse

        params: dict[str, str] = {"query": promql}
        if at is not None:
            params["time"] = str(at)
        url = f"{self.prometheus_url}/api/v1/query?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=5) as reply:
            body = json.loads(reply.read())
        result: list[dict[str, Any]] = body["data"]["result"]
        return result
