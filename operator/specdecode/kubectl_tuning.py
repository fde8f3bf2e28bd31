"""`kubectl specdecode tuning [NAME]`: tunings at a glance, and one tuning's whole report.

The report is rebuilt from the ConfigMap's `report.json` and shown by the same `render`
functions the runner wrote with, so the terminal, the ConfigMap and `--svg FILE` never
disagree; a tuning with no report yet shows its status. More: docs/internals.md.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client import ApiException

from specdecode.api.rollout import GROUP, VERSION
from specdecode.api.tuning import PLURAL
from specdecode.domain.tuning.cells import NONE
from specdecode.domain.tuning.render import markdown, svg, to_json
from specdecode.domain.tuning.report import TuningReport
from specdecode.domain.tuning.wire import ReportFormatError, report_from_json
from specdecode.kubectl_common import (
    PluginError,
    Target,
    age,
    as_object,
    columns,
    object_table,
    render,
)

LIST_COLUMNS = ("NAME", "PHASE", "CONFIGS", "GPU-SECONDS", "WINNERS", "AGE")
REPORT_KEY = "report.json"


def add_command(commands: Any, flags: argparse.ArgumentParser) -> None:
    """`tuning [NAME] [-A] [--svg FILE]` under the plugin's subcommands."""
    tuning = commands.add_parser(
        "tuning", help="list tunings, or one tuning's status and report", parents=[flags]
    )
    tuning.add_argument("name", nargs="?", help="the tuning to show (default: list them)")
    tuning.add_argument("-A", "--all-namespaces", action="store_true")
    tuning.add_argument("--svg", metavar="FILE", help="write speedup vs concurrency as SVG")


def show(target: Target, args: argparse.Namespace, now: datetime) -> str:
    """The list, or one tuning with its report (and the SVG written when asked)."""
    if args.name is None:
        if args.svg is not None:
            raise PluginError("--svg needs a tuning NAME")
        return _list(target, args, now)
    if args.all_namespaces:
        raise PluginError("a tuning cannot be retrieved by name across all namespaces")
    tuning = as_object(
        target.api.get_namespaced_custom_object(GROUP, VERSION, target.namespace, PLURAL, args.name)
    )
    status = tuning.get("status") or {}
    config_map = status.get("reportConfigMap") or f"{args.name}-report"
    report = read_report(target.core, target.namespace, config_map)
    written = "" if args.svg is None else _write_svg(args.svg, report)
    document = {"tuning": tuning, "report": None if report is None else _plain(report)}
    where = f"{target.namespace}/{config_map}"
    text = render(document, args.output, lambda: tuning_text(tuning, report, where, now))
    return text + written if args.output == "table" else text  # JSON/YAML stay parseable


def _list(target: Target, args: argparse.Namespace, now: datetime) -> str:
    if args.all_namespaces:
        found = as_object(target.api.list_cluster_custom_object(GROUP, VERSION, PLURAL))
    else:
        found = as_object(
            target.api.list_namespaced_custom_object(GROUP, VERSION, target.namespace, PLURAL)
        )
    items = found.get("items") or []
    return render(found, args.output, lambda: list_table(items, args.all_namespaces, now))


def read_report(core: client.CoreV1Api, namespace: str, name: str) -> TuningReport | None:
    """The report in the ConfigMap; None while it (or its report.json) is not written."""
    try:
        found = core.read_namespaced_config_map(name, namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    text = (found.data or {}).get(REPORT_KEY)
    if text is None:
        return None
    try:
        return report_from_json(text)
    except ReportFormatError as error:
        raise PluginError(f"ConfigMap {namespace}/{name} {REPORT_KEY}: {error}") from error


def _write_svg(path: str, report: TuningReport | None) -> str:
    if report is None:
        return "\nno SVG written: there is no report yet"
    try:
        Path(path).write_text(svg(report))
    except OSError as error:
        raise PluginError(f"cannot write {path}: {error.strerror or error}") from error
    return f"\nwrote {path}: objective ratio against concurrency, {len(report.labels)} configs"


def _plain(report: TuningReport) -> object:
    """The report as `report.json` holds it (JSON values only)."""
    return json.loads(to_json(report))


def winners_text(status: Mapping[str, Any]) -> str:
    """`1-2 413731e92d, 3-90 2930c6bf41, 91-4096 none`: adjacent bands with one winner merged."""
    merged: list[list[Any]] = []  # [low, high, config]
    for w in status.get("winners") or []:
        low, high, config = w.get("minConcurrency"), w.get("maxConcurrency"), w.get("config")
        if merged and merged[-1][2] == config:
            merged[-1][1] = high
        else:
            merged.append([low, high, config])
    return ", ".join(f"{low}-{high} {config}" for low, high, config in merged)


def list_table(tunings: Sequence[Mapping[str, Any]], all_namespaces: bool, now: datetime) -> str:
    """One line per tuning; CONFIGS is configs left over configs searched."""

    def row(meta: Mapping[str, Any], status: Mapping[str, Any]) -> list[str]:
        return [
            str(meta.get("name", "")),
            str(status.get("phase") or "Pending"),
            f"{status.get('configsLeft', 0)}/{status.get('configs', 0)}",
            f"{float(status.get('gpuSeconds') or 0):.0f}",
            winners_text(status)[:60] or "-",
            age(meta.get("creationTimestamp"), now),
        ]

    return object_table(tunings, all_namespaces, LIST_COLUMNS, row)


def status_text(tuning: Mapping[str, Any], labels: Mapping[str, str], now: datetime) -> str:
    """Phase and message, counters, the winner per band (named by the report's labels)."""
    meta, status = tuning.get("metadata", {}), tuning.get("status") or {}
    lines = [
        f"{meta.get('namespace', '')}/{meta.get('name', '')}: phase "
        f"{status.get('phase') or 'Pending'}  {status.get('message') or ''}".rstrip(),
        f"  configs left {status.get('configsLeft', 0)}/{status.get('configs', 0)}   "
        f"looks {status.get('trialsRun', 0)}   "
        f"GPU-seconds {float(status.get('gpuSeconds') or 0):.0f}   "
        f"age {age(meta.get('creationTimestamp'), now)}",
    ]
    rows = [["  BAND", "WINNER", "SPEEDUP"]]
    for w in status.get("winners") or []:
        config = str(w.get("config"))
        name = "plain decoding" if config == NONE else labels.get(config, config)
        band = f"  {w.get('minConcurrency')}-{w.get('maxConcurrency')}"
        rows.append([band, name, str(w.get("speedup") or "-")])
    if len(rows) > 1:
        lines.append(columns(rows))
    if status.get("schedule"):
        lines.append(f"  schedule (num_speculative_tokens_per_batch_size): {status['schedule']}")
    return "\n".join(lines)


def tuning_text(
    tuning: Mapping[str, Any], report: TuningReport | None, where: str, now: datetime
) -> str:
    """The status, then the report's Markdown (tables, then a sparkline per config)."""
    labels = {} if report is None else report.labels
    summary = status_text(tuning, labels, now)
    if report is None:
        return (
            f"{summary}\n\nreport: ConfigMap {where} not found yet: "
            "the tuning has not written its report"
        )
    return f"{summary}\n\nreport: ConfigMap {where}\n\n{markdown(report).rstrip()}"
