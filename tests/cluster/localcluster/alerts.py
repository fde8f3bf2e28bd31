"""The chart's alerting rules, evaluated by the local Prometheus for a test.

Why from the chart: the rules a user installs (`monitoring.prometheusRule`) are the ones
driven into firing, rendered by `helm template` with the test's shorter `for:` durations.
Prometheus keeps each alert's state as the ALERTS series, which `firing` reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import yaml

from localcluster import prometheus
from localcluster.handle import LocalCluster
from localcluster.manifests import REPO

CHART = REPO / "charts" / "specdecode-operator"


def chart_rule_groups(cluster: LocalCluster, *values: str) -> list[dict[str, Any]]:
    """The PrometheusRule groups the chart renders with these `--set` values."""
    result = cluster.helm(
        "template", "t", str(CHART), "--namespace", "ops",
        "--set=monitoring.prometheusRule.enabled=true", *values,
    )  # fmt: skip
    assert result.returncode == 0, f"helm template:\n{result.stdout}\n{result.stderr}"
    docs = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    rules = [doc for doc in docs if doc["kind"] == "PrometheusRule"]
    assert len(rules) == 1, [doc["kind"] for doc in docs]
    groups: list[dict[str, Any]] = rules[0]["spec"]["groups"]
    return groups


@contextmanager
def chart_rules(cluster: LocalCluster, name: str, *values: str) -> Iterator[None]:
    """The chart's rules loaded as rule file `name` while the block runs."""
    groups = chart_rule_groups(cluster, *values)
    prometheus.load_rules(cluster.paths, cluster.prometheus_url, name, groups)
    try:
        yield
    finally:
        prometheus.unload_rules(cluster.paths, cluster.prometheus_url, name)


def firing(cluster: LocalCluster, alert: str, **labels: str) -> bool:
    """Whether `alert` fires now with these labels."""
    selector = "".join(f',{key}="{value}"' for key, value in labels.items())
    query = f'ALERTS{{alertstate="firing",alertname="{alert}"{selector}}}'
    return bool(cluster.prometheus_query(query))
