"""The Grafana dashboard: valid JSON, every query on a real metric, every required view;
the tuning panels group by labels the tuning gauges really have."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from chart_metrics import metrics_in, operator_metric_names, vllm_metric_names

from specdecode.adapters.traffic_metrics import TRAFFIC_LABELS
from specdecode.adapters.tuning_metrics import SPEEDUP_LABELS

pytestmark = pytest.mark.unit

CHART = Path(__file__).resolve().parents[3] / "charts" / "specdecode-operator"
DASHBOARD = CHART / "dashboards" / "specdecode-rollouts.json"


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def expressions(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]


def tuning_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        panel
        for panel in dashboard["panels"]
        if any("specdecode_tuning_" in t["expr"] for t in panel.get("targets", []))
    ]


def test_dashboard_identity(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "specdecode-rollouts"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "namespace", "rollout", "tuning"}


def test_every_query_uses_a_metric_that_is_exported(dashboard: dict[str, Any]) -> None:
    known = operator_metric_names() | vllm_metric_names()
    for expression in expressions(dashboard):
        used = metrics_in(expression)
        assert used, expression
        assert used <= known, f"{sorted(used - known)} in {expression}"


def test_every_query_is_scoped_to_the_selected_rollout_or_tuning(
    dashboard: dict[str, Any],
) -> None:
    for expression in expressions(dashboard):
        scope = "$tuning" if "specdecode_tuning_" in expression else "$rollout"
        assert "$namespace" in expression and scope in expression, expression


def test_tuning_panels_group_by_labels_the_gauge_has(dashboard: dict[str, Any]) -> None:
    panels = {panel["title"]: panel for panel in tuning_panels(dashboard)}
    assert {"Tuning: speedup vs concurrency", "Tuning: GPU-seconds"} <= set(panels)
    trend = panels["Tuning: speedup vs concurrency"]
    (target,) = trend["targets"]
    grouped = re.search(r"by \(([^)]*)\)", target["expr"])
    assert grouped is not None
    by = {label.strip() for label in grouped.group(1).split(",")}
    assert by <= set(SPEEDUP_LABELS)
    matrix = next(t["options"] for t in trend["transformations"] if t["id"] == "groupingToMatrix")
    assert {matrix["columnField"], matrix["rowField"]} == by
    assert target["format"] == "table" and target["instant"] is True
    steps = {t["id"]: t["options"] for t in trend["transformations"]}
    # groupingToMatrix names its row field "<row>\<column>": renamed back to the x field
    renamed = steps["organize"]["renameByName"][f"{matrix['rowField']}\\{matrix['columnField']}"]
    assert renamed == trend["options"]["xField"] == "concurrency"
    assert steps["convertFieldType"]["conversions"][0]["targetField"] == "concurrency"
    assert steps["sortBy"]["sort"] == [{"field": "concurrency", "desc": False}]


@pytest.mark.parametrize(
    "needed",
    [
        "specdecode_rollout_phase",
        "specdecode_gate_verdict",
        'specdecode_alpha{namespace=~"$namespace",rollout=~"$rollout",bound="lower"}',
        'specdecode_alpha{namespace=~"$namespace",rollout=~"$rollout",bound="upper"}',
        'specdecode_traffic_alpha{namespace=~"$namespace",rollout=~"$rollout",bound="value"}',
        'role="baseline"',
        'role="candidate"',
        "vllm:spec_decode_num_accepted_tokens_total",
        "vllm:inter_token_latency_seconds_bucket",
        'specdecode_tuning_speedup{namespace=~"$namespace",tuning=~"$tuning",bound="value"}',
        'specdecode_tuning_speedup{namespace=~"$namespace",tuning=~"$tuning",bound="lower"}',
        "specdecode_tuning_gpu_seconds",
        "specdecode_tuning_configs_left",
    ],
)
def test_required_views_are_present(dashboard: dict[str, Any], needed: str) -> None:
    assert any(needed in expression for expression in expressions(dashboard))


def test_the_traffic_panel_shows_each_groups_labels(dashboard: dict[str, Any]) -> None:
    (panel,) = [
        panel
        for panel in dashboard["panels"]
        if any("specdecode_traffic_alpha" in t["expr"] for t in panel.get("targets", []))
    ]
    (target,) = panel["targets"]
    shown = set(re.findall(r"\{\{(\w+)\}\}", target["legendFormat"]))
    assert {"traffic_class", "temperature", "output_length"} <= shown <= set(TRAFFIC_LABELS)


def test_metric_extraction_sees_through_selectors() -> None:
    expr = 'histogram_quantile(0.99, sum by (le, pod) (rate(vllm:x_bucket{pod=~"a-.*"}[5m])))'
    assert metrics_in(expr) == {"vllm:x_bucket"}
