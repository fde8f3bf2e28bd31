"""Tuning metrics: every measured cell's ratio with its bounds, spend and configs left;
cells that left the report and deleted tunings leave no series behind."""

from __future__ import annotations

import dataclasses

import pytest

from specdecode.adapters.telemetry import OperatorMetrics
from specdecode.api.tuning_status import SpecDecodeTuningStatus
from specdecode.domain.tuning.recommend import BreakEven
from specdecode.domain.tuning.report import Bounds, CellRow, TuningReport
from specdecode.reconciler.tuning_boundary import status_of

pytestmark = pytest.mark.unit

LABELS = {"aaa": "eagle3 k=3", "bbb": "ngram k=4 lookup=4"}


def row(config: str, load: int, value: float | None) -> CellRow:
    objective = None if value is None else Bounds(value, value - 0.05, value + 0.05)
    return CellRow(config, load, 120.0, objective, objective, None, None, None, None, False)


def report(rows: tuple[CellRow, ...], gpu_seconds: float = 960.0) -> TuningReport:
    return TuningReport(
        objective="tpot",
        loads=tuple(sorted({r.load for r in rows})),
        labels=LABELS,
        configs={k: {"method": v.split()[0]} for k, v in LABELS.items()},
        rows=rows,
        break_even={k: BreakEven(None, None, None) for k in LABELS},
        winners=(),
        band_weights=(),
        families=(),
        schedule=None,
        rollout_patch={},
        gpu_seconds=gpu_seconds,
        exhaustive_gpu_seconds=4800.0,
        looks=8,
        dropped=("bbb",),
        done=False,
    )


FIRST = report((row("aaa", 1, 1.8), row("aaa", 64, 0.9), row("bbb", 1, 1.2), row("bbb", 64, None)))


def speedups(metrics: OperatorMetrics, tuning: str = "t") -> dict[tuple[str, str, str], float]:
    found = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            if family.name == "specdecode_tuning_speedup" and sample.labels["tuning"] == tuning:
                labels = sample.labels
                found[(labels["label"], labels["concurrency"], labels["bound"])] = sample.value
    return found


def gauge(metrics: OperatorMetrics, name: str, tuning: str = "t") -> float | None:
    return metrics.registry.get_sample_value(name, {"namespace": "ns", "tuning": tuning})


def test_every_measured_cell_has_its_ratio_and_bounds() -> None:
    metrics = OperatorMetrics()
    metrics.tuning_reported("ns", "t", FIRST, status_of(FIRST, "t-report"))
    found = speedups(metrics)
    assert found[("eagle3 k=3", "1", "value")] == 1.8
    assert found[("eagle3 k=3", "64", "lower")] == pytest.approx(0.85)
    assert found[("ngram k=4 lookup=4", "1", "upper")] == pytest.approx(1.25)
    assert ("ngram k=4 lookup=4", "64", "value") not in found  # not measured: no series
    assert len(found) == 3 * 3
    assert gauge(metrics, "specdecode_tuning_gpu_seconds") == 960.0
    assert gauge(metrics, "specdecode_tuning_configs") == 2
    assert gauge(metrics, "specdecode_tuning_configs_left") == 1
    assert gauge(metrics, "specdecode_tuning_exhaustive_gpu_seconds") == 4800.0
    sample = metrics.registry.get_sample_value(
        "specdecode_tuning_speedup",
        {
            "namespace": "ns",
            "tuning": "t",
            "config": "aaa",
            "label": "eagle3 k=3",
            "concurrency": "64",
            "bound": "value",
        },
    )
    assert sample == 0.9


def test_the_gauges_follow_the_status_written_with_the_report() -> None:
    metrics = OperatorMetrics()
    status = SpecDecodeTuningStatus(configs=5, configs_left=3, gpu_seconds=1234.5)
    metrics.tuning_reported("ns", "t", FIRST, status)
    assert gauge(metrics, "specdecode_tuning_configs_left") == 3
    assert gauge(metrics, "specdecode_tuning_gpu_seconds") == 1234.5


def test_cells_no_longer_in_the_report_lose_their_series() -> None:
    metrics = OperatorMetrics()
    metrics.tuning_reported("ns", "t", FIRST, status_of(FIRST, None))
    second = dataclasses.replace(FIRST, rows=(row("aaa", 1, 1.7), row("aaa", 16, 1.3)))
    metrics.tuning_reported("ns", "t", second, status_of(second, None))
    assert {(label, load) for label, load, _ in speedups(metrics)} == {
        ("eagle3 k=3", "1"),
        ("eagle3 k=3", "16"),
    }
    assert speedups(metrics)[("eagle3 k=3", "1", "value")] == 1.7


def test_a_deleted_tuning_leaves_no_series_and_others_keep_theirs() -> None:
    metrics = OperatorMetrics()
    metrics.tuning_reported("ns", "t", FIRST, status_of(FIRST, None))
    metrics.tuning_reported("ns", "other", FIRST, status_of(FIRST, None))
    metrics.tuning_forgotten("ns", "t")
    tuning_series = [
        sample.labels
        for family in metrics.registry.collect()
        if family.name.startswith("specdecode_tuning_")
        for sample in family.samples
    ]
    assert tuning_series and all(labels["tuning"] == "other" for labels in tuning_series)
    assert len(speedups(metrics, "other")) == 9
    metrics.tuning_reported("ns", "t", FIRST, status_of(FIRST, None))  # recreated
    assert len(speedups(metrics)) == 9
