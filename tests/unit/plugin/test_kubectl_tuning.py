"""`kubectl specdecode tuning`: list, one tuning with and without its report ConfigMap,
`--svg` and `-o json`, against fake API clients (no cluster)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiException

from specdecode.domain.tuning.recommend import BreakEven, FamilyScore
from specdecode.domain.tuning.render import markdown, sparklines, svg, to_json
from specdecode.domain.tuning.report import Bounds, CellRow, TuningReport, Winner
from specdecode.domain.tuning.wire import report_from_json
from specdecode.kubectl_common import PluginError, Target
from specdecode.kubectl_plugin import execute, parse_args
from specdecode.reconciler.tuning_boundary import status_of

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
EAGLE, NGRAM = "4cc72a67f1", "1f77b37676"  # search-space order is not sorted order


def bounds(value: float) -> Bounds:
    return Bounds(value, round(value - 0.04, 4), round(value + 0.04, 4))


def row(config: str, load: int, value: float | None, dropped: bool = False) -> CellRow:
    b = None if value is None else bounds(value)
    return CellRow(config, load, 240.0, b, b, b, bounds(1.1), bounds(0.7), bounds(2.4), dropped)


REPORT = TuningReport(
    objective="MinimiseTPOT",
    loads=(1, 16, 128),
    labels={EAGLE: "eagle3 k=5", NGRAM: "ngram k=5"},
    configs={
        EAGLE: {"method": "eagle3", "model": "m", "num_speculative_tokens": 5},
        NGRAM: {"method": "ngram", "num_speculative_tokens": 5},
    },
    rows=(
        row(EAGLE, 1, 2.1),
        row(EAGLE, 16, 1.6),
        row(EAGLE, 128, 0.8),
        row(NGRAM, 1, 1.2, True),
        row(NGRAM, 16, 1.05, True),
        row(NGRAM, 128, None, True),
    ),
    break_even={EAGLE: BreakEven(16, 128, 70.5), NGRAM: BreakEven(1, None, None)},
    winners=(
        Winner(1, 4, 1, EAGLE, bounds(2.1), True, "decided"),
        Winner(5, 45, 16, EAGLE, bounds(1.6), True, "decided"),
        Winner(46, 4096, 128, "none", None, True, "plain decoding wins"),
    ),
    band_weights=(0.2, 0.3, 0.5),
    families=(
        FamilyScore(
            "eagle3", ((EAGLE, 5, 2.1), (EAGLE, 5, 1.6), ("none", 0, 1.0)), 1.4, (EAGLE, 1.3)
        ),
    ),
    schedule=[[1, 45, 5], [46, 4096, 0]],
    rollout_patch={"spec": {"speculative": {"method": "eagle3"}}},
    gpu_seconds=5760.0,
    exhaustive_gpu_seconds=14400,
    looks=18,
    dropped=(NGRAM,),
    done=True,
)


def tuning(
    name: str, namespace: str = "serving", report: TuningReport | None = REPORT
) -> dict[str, Any]:
    status = status_of(report, f"{name}-report").to_wire() if report is not None else None
    return {
        "apiVersion": "specdecode.io/v1alpha1",
        "kind": "SpecDecodeTuning",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": "2026-01-01T09:00:00Z",
        },
        "status": status,
    }


def not_found(kind: str, name: str) -> ApiException:
    error = ApiException(status=404, reason="Not Found")
    error.body = json.dumps({"kind": "Status", "details": {"name": name, "kind": kind}})
    return error


class FakeCustomObjects:
    """The three CustomObjectsApi calls the view makes, on SpecDecodeTunings only."""

    def __init__(self, *items: dict[str, Any]) -> None:
        self.items = items

    def _check(self, group: str, version: str, plural: str) -> None:
        assert (group, version, plural) == ("specdecode.io", "v1alpha1", "specdecodetunings")

    def get_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str
    ) -> dict[str, Any]:
        self._check(group, version, plural)
        for item in self.items:
            if item["metadata"]["name"] == name and item["metadata"]["namespace"] == namespace:
                return item
        raise not_found(plural, name)

    def list_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str
    ) -> dict[str, Any]:
        self._check(group, version, plural)
        return {"items": [i for i in self.items if i["metadata"]["namespace"] == namespace]}

    def list_cluster_custom_object(self, group: str, version: str, plural: str) -> dict[str, Any]:
        self._check(group, version, plural)
        return {"items": list(self.items)}


class FakeCore:
    """ConfigMaps by (namespace, name), with the runner's keys."""

    def __init__(self, config_maps: dict[tuple[str, str], dict[str, str]]) -> None:
        self.config_maps = config_maps

    def read_namespaced_config_map(self, name: str, namespace: str) -> client.V1ConfigMap:
        if (namespace, name) not in self.config_maps:
            raise not_found("configmaps", name)
        return client.V1ConfigMap(data=self.config_maps[(namespace, name)])


def written(report: TuningReport) -> dict[str, str]:
    return {
        "report.json": to_json(report),
        "report.md": markdown(report),
        "report.svg": svg(report),
        "state.json": "{}",
    }


def plugin(
    argv: list[str],
    *items: dict[str, Any],
    config_maps: dict[tuple[str, str], dict[str, str]] | None = None,
) -> str:
    core = FakeCore(config_maps or {})
    target = Target(
        cast(client.CustomObjectsApi, FakeCustomObjects(*items)),
        cast(client.CoreV1Api, core),
        "serving",
    )
    return execute(target, parse_args(argv), NOW)


WITH_REPORT = {("serving", "llama-tune-report"): written(REPORT)}


def test_arguments() -> None:
    args = parse_args(["-n", "x", "tuning", "t", "--svg", "out.svg", "-o", "json"])
    assert (args.command, args.name, args.namespace, args.svg, args.output) == (
        "tuning",
        "t",
        "x",
        "out.svg",
        "json",
    )
    listing = parse_args(["tuning", "-A"])
    assert listing.name is None and listing.all_namespaces and listing.svg is None


def test_list_shows_configs_left_spend_winners_and_age() -> None:
    fresh = tuning("fresh", report=None)
    rows = plugin(["tuning"], tuning("llama-tune"), fresh, tuning("x", "other")).splitlines()
    assert rows[0].split() == ["NAME", "PHASE", "CONFIGS", "GPU-SECONDS", "WINNERS", "AGE"]
    assert rows[1].split()[:4] == ["llama-tune", "Succeeded", "1/2", "5760"]
    assert f"1-45 {EAGLE}, 46-4096 none" in rows[1] and rows[1].endswith("3h")
    assert rows[2].split() == ["fresh", "Pending", "0/0", "0", "-", "3h"]
    assert len(rows) == 3  # the other namespace's tuning is not listed
    wide = plugin(["tuning", "-A"], tuning("llama-tune"), tuning("x", "other")).splitlines()
    assert wide[0].startswith("NAMESPACE") and wide[2].startswith("other")
    assert plugin(["tuning"]) == "No resources found"
    assert json.loads(plugin(["tuning", "-o", "json"], fresh)) == {"items": [fresh]}


def test_get_shows_status_then_the_report_rebuilt_from_the_config_map() -> None:
    text = plugin(["tuning", "llama-tune"], tuning("llama-tune"), config_maps=WITH_REPORT)
    lines = text.splitlines()
    assert lines[0] == "serving/llama-tune: phase Succeeded  every load decided or the budget spent"
    assert lines[1].split() == [
        "configs",
        "left",
        "1/2",
        "looks",
        "18",
        "GPU-seconds",
        "5760",
        "age",
        "3h",
    ]
    assert lines[3].split() == ["1-4", "eagle3", "k=5", "2.100", "[2.060,", "2.140]"]
    assert lines[5].split() == ["46-4096", "plain", "decoding", "-"]
    assert "schedule (num_speculative_tokens_per_batch_size): [[1, 45, 5], [46, 4096, 0]]" in text
    assert "report: ConfigMap serving/llama-tune-report" in text
    assert markdown(REPORT).rstrip() in text
    assert "| ngram k=5 (dropped) | 16 |" in text
    for line in sparklines(REPORT)[1:]:  # one sparkline per config
        assert line in lines


def test_get_without_the_config_map_says_so_and_shows_the_status(tmp_path: Path) -> None:
    picture = tmp_path / "s.svg"
    text = plugin(["tuning", "llama-tune", "--svg", str(picture)], tuning("llama-tune"))
    assert text.startswith("serving/llama-tune: phase Succeeded")
    assert "report: ConfigMap serving/llama-tune-report not found yet" in text
    assert "no SVG written" in text and not picture.exists()
    # a ConfigMap with only the runner's state is not a report either
    state_only = {("serving", "llama-tune-report"): {"state.json": "{}"}}
    assert "not found yet" in plugin(
        ["tuning", "llama-tune"], tuning("llama-tune"), config_maps=state_only
    )


def test_svg_writes_the_reports_own_picture(tmp_path: Path) -> None:
    picture = tmp_path / "speedup.svg"
    text = plugin(
        ["tuning", "llama-tune", "--svg", str(picture)],
        tuning("llama-tune"),
        config_maps=WITH_REPORT,
    )
    assert (
        picture.read_text()
        == svg(REPORT)
        == WITH_REPORT[("serving", "llama-tune-report")]["report.svg"]
    )
    assert text.endswith(f"wrote {picture}: objective ratio against concurrency, 2 configs")
    picture.unlink()
    as_json = plugin(
        ["tuning", "llama-tune", "--svg", str(picture), "-o", "json"],
        tuning("llama-tune"),
        config_maps=WITH_REPORT,
    )
    assert json.loads(as_json)["report"] is not None  # still parseable: no "wrote" line
    assert picture.read_text() == svg(REPORT)


def test_json_output_is_the_object_and_the_report() -> None:
    item = tuning("llama-tune")
    out = json.loads(plugin(["tuning", "llama-tune", "-o", "json"], item, config_maps=WITH_REPORT))
    assert out["tuning"] == item
    assert report_from_json(json.dumps(out["report"])) == REPORT
    assert json.loads(plugin(["tuning", "llama-tune", "-o", "json"], item))["report"] is None
    assert yaml.safe_load(plugin(["tuning", "llama-tune", "-o", "yaml"], item))["tuning"] == item


def test_the_config_map_the_status_names_is_read() -> None:
    item = tuning("llama-tune")
    item["status"]["reportConfigMap"] = "elsewhere"
    maps = {("serving", "elsewhere"): written(REPORT)}
    assert "report: ConfigMap serving/elsewhere\n" in plugin(
        ["tuning", "llama-tune"], item, config_maps=maps
    )


def test_failures_are_one_line() -> None:
    with pytest.raises(
        PluginError,
        match=re.escape('specdecodetunings.specdecode.io "nope" not found in namespace "serving"'),
    ):
        plugin(["tuning", "nope"], tuning("llama-tune"))
    broken = {("serving", "llama-tune-report"): {"report.json": '{"rows": ['}}
    with pytest.raises(
        PluginError,
        match=re.escape("ConfigMap serving/llama-tune-report report.json: not a tuning report"),
    ):
        plugin(["tuning", "llama-tune"], tuning("llama-tune"), config_maps=broken)
    with pytest.raises(PluginError, match="--svg needs a tuning NAME"):
        plugin(["tuning", "--svg", "x.svg"])
    with pytest.raises(PluginError, match="across all namespaces"):
        plugin(["tuning", "llama-tune", "-A"], tuning("llama-tune"))
