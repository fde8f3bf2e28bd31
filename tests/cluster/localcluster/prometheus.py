"""Debian's Prometheus (2.42, no Kubernetes discovery) scraping pods via file-based SD.

Why file_sd: Debian's build rejects ``kubernetes_sd_configs``, so the node agent writes the
scrape targets of annotated pods (with namespace, pod and pod-label target labels) to a JSON
file and Prometheus re-reads it every second. Scrape and evaluation intervals are 1 s so
tests see fresh samples quickly. ``--web.enable-lifecycle`` lets tests stop it via /-/quit
and the harness start it again on the same port. Alerting rules a test hands over
(`load_rules`: the chart's PrometheusRule groups) are evaluated every second like the
Prometheus Operator would have them evaluated; their ALERTS series stay in the TSDB.
Processes outside the cluster (the operator a test runs on this machine) are scraped while
a test lists them (`scraped`: job "local", whose targets may set their own `job` label, as
a ServiceMonitor's would).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from localcluster.paths import ClusterPaths
from localcluster.process import ComponentFailed, start_component

PROMETHEUS_BINARY = "/usr/bin/prometheus"
COMPONENT = "prometheus"


def find_binary() -> Path:
    """The prometheus binary, or a loud error that says how to install it."""
    found = shutil.which("prometheus") or (
        PROMETHEUS_BINARY if Path(PROMETHEUS_BINARY).exists() else None
    )
    if found is None:
        raise ComponentFailed(
            COMPONENT,
            "no prometheus binary; install it: bash tests/cluster/install-system-deps.sh",
            None,
        )
    return Path(found)


def write_config(paths: ClusterPaths, port: int) -> Path:
    """prometheus.yml: itself, plus every target the agent lists in the SD file."""
    if not paths.prometheus_sd_file.exists():
        paths.prometheus_sd_file.write_text("[]\n")
    rules_dir(paths).mkdir(parents=True, exist_ok=True)
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules_dir(paths) / "*.yaml")],
        "scrape_configs": [
            {
                "job_name": "prometheus",
                "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
            },
            {
                "job_name": "pods",
                "file_sd_configs": [
                    {"files": [str(paths.prometheus_sd_file)], "refresh_interval": "1s"}
                ],
            },
            {
                "job_name": "local",
                "file_sd_configs": [
                    {"files": [str(local_targets_file(paths))], "refresh_interval": "1s"}
                ],
            },
        ],
    }
    target = paths.prometheus_dir / "prometheus.yml"
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    return target


def local_targets_file(paths: ClusterPaths) -> Path:
    """file_sd targets of processes on this machine (`scraped`)."""
    return paths.prometheus_dir / "local-targets.json"


@contextmanager
def scraped(paths: ClusterPaths, url: str, address: str, labels: dict[str, str]) -> Iterator[None]:
    """Scrape http://`address`/metrics with these target labels while the block runs.

    The configuration is rewritten and reloaded first, so a Prometheus started by an older
    harness (without the "local" job) scrapes it too.
    """
    targets = local_targets_file(paths)
    port = urllib.parse.urlsplit(url).port
    assert port is not None, url
    write_config(paths, port)
    _reload(url)
    targets.write_text(json.dumps([{"targets": [address], "labels": labels}]))
    try:
        yield
    finally:
        targets.write_text("[]\n")


def rules_dir(paths: ClusterPaths) -> Path:
    """Where rule files go; Prometheus loads every *.yaml there on start and on reload."""
    return paths.prometheus_dir / "rules"


def load_rules(paths: ClusterPaths, url: str, name: str, groups: list[dict[str, object]]) -> None:
    """Write `groups` as rule file `name` and make Prometheus reload its configuration."""
    (rules_dir(paths) / f"{name}.yaml").write_text(yaml.safe_dump({"groups": groups}))
    _reload(url)


def unload_rules(paths: ClusterPaths, url: str, name: str) -> None:
    """Remove rule file `name` (if any) and reload."""
    (rules_dir(paths) / f"{name}.yaml").unlink(missing_ok=True)
    _reload(url)


def _reload(url: str) -> None:
    request = urllib.request.Request(f"{url}/-/reload", method="POST")
    with urllib.request.urlopen(request, timeout=10) as reply:
        if int(reply.status) != 200:
            raise RuntimeError(f"Prometheus reload answered {reply.status}")


def start(paths: ClusterPaths, port: int) -> subprocess.Popen[bytes]:
    """Start Prometheus on 127.0.0.1:``port`` with its TSDB under .cluster/prometheus."""
    config = write_config(paths, port)
    argv = [
        str(find_binary()),
        f"--config.file={config}",
        f"--storage.tsdb.path={paths.prometheus_dir / 'data'}",
        "--storage.tsdb.retention.time=1d",
        f"--web.listen-address=127.0.0.1:{port}",
        "--web.enable-lifecycle",
        "--log.level=warn",
    ]
    return start_component(paths, COMPONENT, argv)


def ready(port: int) -> bool:
    """/-/ready answers 200 once the TSDB is open and the config loaded."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as reply:
        return int(reply.status) == 200
