"""A tuning's metrics: its objective ratio per config and concurrency, and what it spent.

Set from each report the runner writes (the same typed `TuningReport` as the ConfigMap's
`report.json`) and the status written with it, so a dashboard shows exactly the figures
of the report and the status, never a second bookkeeping. A cell's series exist only
while the report has a measurement for it: a cell no longer in the report (a changed
spec) loses its series, and a deleted tuning loses all of them.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from specdecode.api.tuning_status import SpecDecodeTuningStatus
from specdecode.domain.tuning.report import TuningReport

# (config fingerprint, its label, concurrency, bound): one speedup series of a tuning
CellLabels = tuple[str, str, str, str]
# The dashboard groups speedup by `label` (legend) and `concurrency` (x axis): see its test.
SPEEDUP_LABELS = ("namespace", "tuning", "config", "label", "concurrency", "bound")


class TuningMetrics:
    """Gauges of every tuning, on the operator's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["namespace", "tuning"]
        self.speedup = Gauge(
            "specdecode_tuning_speedup",
            "The objective ratio (speculative over plain decoding) of one config at one "
            "concurrency, its point estimate and bounds (bound = value, lower, upper).",
            SPEEDUP_LABELS,
            registry=registry,
        )
        self.gpu_seconds = Gauge(
            "specdecode_tuning_gpu_seconds",
            "GPU-seconds the tuning has spent on trials so far.",
            labels,
            registry=registry,
        )
        self.exhaustive_gpu_seconds = Gauge(
            "specdecode_tuning_exhaustive_gpu_seconds",
            "GPU-seconds every cell at trial.maxSeconds would cost (what elimination saves).",
            labels,
            registry=registry,
        )
        self.configs = Gauge(
            "specdecode_tuning_configs",
            "Configs in the tuning's search space.",
            labels,
            registry=registry,
        )
        self.configs_left = Gauge(
            "specdecode_tuning_configs_left",
            "Configs not yet eliminated.",
            labels,
            registry=registry,
        )
        self._cells: dict[tuple[str, str], set[CellLabels]] = {}

    def reported(
        self,
        namespace: str,
        name: str,
        report: TuningReport,
        status: SpecDecodeTuningStatus,
    ) -> None:
        """Reflect a report and its status; drop the series of cells it no longer has."""
        self.gpu_seconds.labels(namespace, name).set(status.gpu_seconds)
        self.configs.labels(namespace, name).set(status.configs)
        self.configs_left.labels(namespace, name).set(status.configs_left)
        self.exhaustive_gpu_seconds.labels(namespace, name).set(report.exhaustive_gpu_seconds)
        cells: set[CellLabels] = set()
        for row in report.rows:
            if row.objective is None:
                continue
            label = report.labels.get(row.config, row.config)
            for bound, value in (
                ("value", row.objective.value),
                ("lower", row.objective.lower),
                ("upper", row.objective.upper),
            ):
                cell = (row.config, label, str(row.load), bound)
                self.speedup.labels(namespace, name, *cell).set(value)
                cells.add(cell)
        for gone in self._cells.get((namespace, name), set()) - cells:
            self.speedup.remove(namespace, name, *gone)
        self._cells[(namespace, name)] = cells

    def forgotten(self, namespace: str, name: str) -> None:
        """Drop every series of a deleted tuning so dashboards don't show ghosts."""
        for metric in (
            self.speedup,
            self.gpu_seconds,
            self.exhaustive_gpu_seconds,
            self.configs,
            self.configs_left,
        ):
            metric.remove_by_labels({"namespace": namespace, "tuning": name})
        self._cells.pop((namespace, name), None)
