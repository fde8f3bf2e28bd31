"""Prometheus file-SD groups: targets, metrics path and label mapping; atomic file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localcluster.agent.promsd import TargetFile, sanitize_label_name, target_group

pytestmark = pytest.mark.unit


def pod(annotations: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "eng-0",
            "namespace": "team",
            "annotations": annotations,
            "labels": labels or {},
        },
        "spec": {
            "nodeName": "gpu-h100-0",
            "containers": [{"name": "c", "ports": [{"containerPort": 8000}]}],
        },
    }


def test_unannotated_pods_are_not_targets() -> None:
    assert target_group(pod({}), "127.0.0.5") is None
    assert target_group(pod({"prometheus.io/scrape": "false"}), "127.0.0.5") is None


def test_group_uses_annotated_port_and_path_and_maps_labels() -> None:
    group = target_group(
        pod(
            {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9100",
                "prometheus.io/path": "/m",
            },
            {"app.kubernetes.io/name": "vllm", "pod": "clash", "role": "baseline"},
        ),
        "127.0.0.5",
    )
    assert group == {
        "targets": ["127.0.0.5:9100"],
        "labels": {
            "__metrics_path__": "/m",
            "namespace": "team",
            "pod": "eng-0",
            "node": "gpu-h100-0",
            "label_app_kubernetes_io_name": "vllm",
            "app_kubernetes_io_name": "vllm",
            "label_pod": "clash",
            "label_role": "baseline",
            "role": "baseline",
        },
    }


def test_default_port_is_the_first_container_port_and_path_is_metrics() -> None:
    group = target_group(pod({"prometheus.io/scrape": "true"}), "127.0.0.6")
    assert group is not None
    assert group["targets"] == ["127.0.0.6:8000"]
    assert group["labels"]["__metrics_path__"] == "/metrics"


@pytest.mark.parametrize(
    ("raw", "clean"), [("a.b/c-d", "a_b_c_d"), ("9lives", "_9lives"), ("ok_1", "ok_1")]
)
def test_sanitize_label_name(raw: str, clean: str) -> None:
    assert sanitize_label_name(raw) == clean


def test_target_file_adds_and_removes_groups(tmp_path: Path) -> None:
    path = tmp_path / "prom" / "targets.json"
    targets = TargetFile(path)
    assert json.loads(path.read_text()) == []
    group = {"targets": ["127.0.0.2:80"], "labels": {"pod": "a"}}
    targets.set("uid-a", group)
    assert json.loads(path.read_text()) == [group]
    targets.set("uid-a", None)
    assert json.loads(path.read_text()) == []
    assert [p.name for p in path.parent.iterdir()] == ["targets.json"]
