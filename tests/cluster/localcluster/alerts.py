"""The chart's alerting rules, evaluated by the local Prometheus for a test.

Why from the chart: the rules a user installs (`monitoring.prometheusRule`) are the ones
driven into firing, rendered by `helm template` with the test's shorter `for:` durations.
Prometheus keeps each alert's state as the ALERTS series, which `firing` reads.
`malformed_acceptance_series` makes one rollout's acceptance query fail (Error verdicts)
while every other rollout's is answered as usual.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
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


def firing_alert(cluster: LocalCluster, alert: str, **labels: str) -> dict[str, Any] | None:
    """`alert` firing now with these labels, as Prometheus' alerts API has it (labels and
    the annotations rendered for them); None while it does not. Read it while it fires:
    the API forgets an alert once it resolves, and ALERTS keeps no annotations."""
    reply = httpx.get(f"{cluster.prometheus_url}/api/v1/alerts", timeout=10)
    reply.raise_for_status()
    for one in reply.json()["data"]["alerts"]:
        found: dict[str, Any] = one
        if (
            found["state"] == "firing"
            and found["labels"].get("alertname") == alert
            and labels.items() <= found["labels"].items()
        ):
            return found
    return None


# A per-position acceptance counter whose `position` is not a number: the operator's
# acceptance query (`sum by (position)`) then answers a row it cannot read, which it must
# take as a failed metric source (Error verdict), never as data.
MALFORMED_SERIES = b'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="first"} 1\n'


class _MalformedSeries(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(MALFORMED_SERIES)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args  # Prometheus scrapes every second: not worth a line each


@contextmanager
def malformed_acceptance_series(cluster: LocalCluster, namespace: str, pod: str) -> Iterator[None]:
    """While the block runs, Prometheus scrapes a malformed acceptance series labelled as
    engine pod `namespace/pod` (name it as a rollout's candidate pod: `<rollout>-candidate-
    <a>-<b>`), so that rollout's Acceptance gate errors on every look and no other's does.

    Why this and not a stopped Prometheus: the alerts under test are evaluated by the same
    Prometheus, and every other rollout of the test must go on being measured.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), _MalformedSeries)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    labels = {"job": "malformed-engine", "namespace": namespace, "pod": pod}
    try:
        with prometheus.scraped(cluster.paths, cluster.prometheus_url, address, labels):
            yield
    finally:
        server.shutdown()
        server.server_close()
