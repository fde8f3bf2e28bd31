"""`kubectl specdecode`: argument parsing, output formats and error messages (no cluster).

The live behaviour (against the API server, with the operator acting on the annotation) is
covered by tests/e2e/test_chart.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiException

from specdecode.kubectl_common import explain, render
from specdecode.kubectl_plugin import list_table, parse_args, status_text

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def rollout(name: str = "llama", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "specdecode.io/v1alpha1",
        "kind": "SpecDecodeRollout",
        "metadata": {
            "name": name,
            "namespace": "serving",
            "creationTimestamp": "2026-01-01T10:00:00Z",
        },
        "status": status,
    }


ANALYZING = rollout(
    phase="Analyzing",
    phaseSince="2026-01-01T11:58:30Z",
    currentStage="low-concurrency",
    message="measuring alpha",
    alpha="0.712 [0.690, 0.733]",
    stages=[
        {
            "name": "low-concurrency",
            "phase": "Running",
            "startedAt": "2026-01-01T11:59:00Z",
            "gates": [
                {
                    "name": "acceptance",
                    "verdict": "Successful",
                    "value": 0.712,
                    "lowerBound": 0.69,
                    "upperBound": 0.733,
                    "threshold": 0.55,
                    "samples": 40960,
                    "reason": "lower bound 0.690 >= 0.550",
                }
            ],
        }
    ],
)


@pytest.mark.parametrize(
    "argv",
    [
        ["-n", "serving", "get", "llama"],
        ["get", "llama", "-n", "serving"],
        ["get", "--namespace=serving", "llama"],
    ],
)
def test_namespace_flag_before_or_after_the_command(argv: list[str]) -> None:
    args = parse_args(argv)
    assert (args.command, args.name, args.namespace, args.output) == (
        "get",
        "llama",
        "serving",
        "table",
    )


def test_kubectl_flags() -> None:
    args = parse_args(["--kubeconfig", "/k", "--context", "prod", "status", "llama", "-o", "yaml"])
    assert (args.kubeconfig, args.context, args.output, args.command) == (
        "/k",
        "prod",
        "yaml",
        "status",
    )
    assert parse_args(["list", "-A"]).all_namespaces is True
    assert parse_args(["list"]).namespace is None


@pytest.mark.parametrize(
    "argv", [["frobnicate", "llama"], ["promote"], ["get", "x", "-o", "wide"], []]
)
def test_bad_usage_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2


@pytest.mark.parametrize("action", ["promote", "abort", "retry"])
def test_actions_take_a_name(action: str) -> None:
    args = parse_args([action, "llama"])
    assert (args.command, args.name) == (action, "llama")


def test_status_shows_gates_bounds_and_time_in_stage_and_phase() -> None:
    text = status_text(ANALYZING, NOW)
    assert "serving/llama: phase Analyzing  stage low-concurrency" in text
    assert "acceptance" in text and "[0.690, 0.733]" in text and "0.550" in text
    assert "60s" in text  # in stage since 11:59:00
    assert text.endswith("time in phase Analyzing: 1m")


def test_status_of_a_fresh_rollout_without_status() -> None:
    fresh = rollout()
    fresh["status"] = None
    assert status_text(fresh, NOW).startswith("serving/llama: phase -")


def test_list_table_columns_and_all_namespaces() -> None:
    rows = list_table([ANALYZING, rollout("mistral", phase="Promoted")], False, NOW).splitlines()
    assert rows[0].split() == [
        "NAME",
        "PHASE",
        "STAGE",
        "VERDICT",
        "ALPHA",
        "ITL-RATIO",
        "AGE",
        "MESSAGE",
    ]
    assert rows[1].split()[:4] == ["llama", "Analyzing", "low-concurrency", "-"]
    assert "2h" in rows[1]
    wide = list_table([ANALYZING], True, NOW).splitlines()
    assert wide[0].startswith("NAMESPACE") and wide[1].startswith("serving")
    assert list_table([], False, NOW) == "No resources found"


def test_json_and_yaml_output_are_the_object_itself() -> None:
    assert json.loads(render(ANALYZING, "json", lambda: "table")) == ANALYZING
    assert yaml.safe_load(render(ANALYZING, "yaml", lambda: "table")) == ANALYZING
    assert render(ANALYZING, "table", lambda: "table") == "table"


def api_error(status: int, body: dict[str, Any] | str) -> ApiException:
    error = ApiException(status=status, reason="Not Found" if status == 404 else "Forbidden")
    error.body = body if isinstance(body, str) else json.dumps(body)
    return error


def test_missing_rollout_vs_missing_crd() -> None:
    missing = api_error(
        404,
        {
            "kind": "Status",
            "reason": "NotFound",
            "details": {"name": "llama", "group": "specdecode.io", "kind": "specdecoderollouts"},
        },
    )
    assert str(explain(missing, "serving", "llama")) == (
        'specdecoderollouts.specdecode.io "llama" not found in namespace "serving"'
    )
    no_crd = api_error(404, "404 page not found")
    assert "is the CRD installed?" in str(explain(no_crd, "serving", "llama"))


def test_forbidden_keeps_the_servers_message() -> None:
    forbidden = api_error(403, {"kind": "Status", "message": 'user "u" cannot patch'})
    assert str(explain(forbidden, "serving", "llama")) == '403 Forbidden: user "u" cannot patch'


def test_patch_prints_the_owners_patch_alone_or_as_a_kustomize_patch_file() -> None:
    from specdecode.kubectl_common import PluginError
    from specdecode.kubectl_plugin import owner_patch_text

    change = {"spec": {"template": {"spec": {"containers": [{"name": "vllm", "args": ["m"]}]}}}}
    rollout = {
        "metadata": {"name": "chat-eagle3", "namespace": "team-a"},
        "status": {"workload": {"source": "Deployment/chat", "ownerPatch": json.dumps(change)}},
    }
    assert json.loads(owner_patch_text(rollout)) == change
    kustomize = yaml.safe_load(owner_patch_text(rollout, "kustomize"))
    assert kustomize["kind"] == "Deployment"
    assert kustomize["metadata"] == {"name": "chat", "namespace": "team-a"}
    assert kustomize["spec"] == change["spec"]
    assert parse_args(["patch", "chat-eagle3", "--format", "kustomize"]).format == "kustomize"
    waiting = {"metadata": {"name": "x"}, "status": {"workload": {"source": "Deployment/chat"}}}
    with pytest.raises(PluginError, match="no config has passed yet"):
        owner_patch_text(waiting)
    with pytest.raises(PluginError, match="no workloadRef"):
        owner_patch_text({"metadata": {"name": "x"}, "status": {}})


def test_status_shows_a_drift_and_an_adopted_source() -> None:
    from specdecode.report import gate_table

    rollout = {
        "metadata": {"name": "chat-eagle3", "namespace": "team-a"},
        "status": {
            "phase": "Promoted",
            "drift": {
                "detectedAt": "2026-11-27T05:00:00Z",
                "alpha": 0.12,
                "lowerBound": 0.1,
                "upperBound": 0.14,
                "threshold": 0.2,
            },
            "workload": {
                "source": "Deployment/chat",
                "droppedLabels": ["app"],
                "ownerPatch": "{}",
            },
        },
    }
    text = gate_table(rollout)
    assert "DRIFTED since 2026-11-27T05:00:00Z: production alpha 0.12" in text
    assert "< minAlpha 0.2" in text
    assert "source Deployment/chat (labels dropped: app; patch: kubectl specdecode patch" in text


def test_status_shows_a_latency_drift_with_its_edge_and_share() -> None:
    from specdecode.report import gate_table

    drift = {
        "kind": "Latency",
        "detectedAt": "2026-11-27T05:00:00Z",
        "lowerBound": 0.031,
        "upperBound": 0.069,
        "threshold": 0.01,
        "tailShare": 0.05,
        "edgeSeconds": 0.05,
        "referenceSeconds": 0.035,
    }
    rollout = {"metadata": {"name": "chat"}, "status": {"phase": "Promoted", "drift": drift}}
    text = gate_table(rollout)
    assert (
        "DRIFTED (latency) since 2026-11-27T05:00:00Z: production's step-ITL share above "
        "0.050 s 0.0500 [0.0310, 0.0690] > 0.0100 (analysis 0.035 s)"
    ) in text
