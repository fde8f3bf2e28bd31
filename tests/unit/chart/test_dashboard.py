"""The Grafana dashboard: valid JSON, every query on a real metric, every required view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chart_metrics import metrics_in, operator_metric_names, vllm_metric_names

pytestmark = pytest.mark.unit

CHART = Path(__file__).resolve().parents[3] / "charts" / "specdecode-operator"
DASHBOARD = CHART / "dashboards" / "specdecode-rollouts.json"


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def expressions(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]


def test_dashboard_identity(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "specdecode-rollouts"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "namespace", "rollout"}


def test_every_query_uses_a_metric_that_is_exported(dashboard: dict[str, Any]) -> None:
    known = operator_metric_names() | vllm_metric_names()
    for expression in expressions(dashboard):
        used = metrics_in(expression)
        assert used, expression
        assert used <= known, f"{sorted(used - known)} in {expression}"


def test_every_query_is_scoped_to_the_selected_rollout(dashboard: dict[str, Any]) -> None:
    for expression in expressions(dashboard):
        assert "$namespace" in expression and "$rollout" in expression, expression


@pytest.mark.parametrize(
    "needed",
    [
        "specdecode_rollout_phase",
        "specdecode_gate_verdict",
        'specdecode_alpha{namespace=~"$namespace",rollout=~"$rollout",bound="lower"}',
        'specdecode_alpha{namespace=~"$namespace",rollout=~"$rollout",bound="upper"}',
        'role="baseline"',
        'role="candidate"',
        "vllm:spec_decode_num_accepted_tokens_total",
        "vllm:inter_token_latency_seconds_bucket",
    ],
)
def test_required_views_are_present(dashboard: dict[str, Any], needed: str) -> None:
    assert any(needed in expression for expression in expressions(dashboard))


def test_metric_extraction_sees_through_selectors() -> None:
    expr = 'histogram_quantile(0.99, sum by (le, pod) (rate(vllm:x_bucket{pod=~"a-.*"}[5m])))'
    assert metrics_in(expr) == {"vllm:x_bucket"}
