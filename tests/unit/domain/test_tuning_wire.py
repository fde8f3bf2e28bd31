"""`report.json` read back: the exact inverse of `to_json` on reports of simulated runs.

The runs are the tuning simulation's own (eliminations, unmeasured cells, a release with and
one without the per-batch-size schedule), so the JSON carries every shape a real report has.
"""

from __future__ import annotations

import json
import random

import pytest
from tuning_sim import Scenario, SimulatedTuning

from specdecode.domain.tuning.render import markdown, sparklines, svg, to_json
from specdecode.domain.tuning.report import TuningReport, build_report
from specdecode.domain.tuning.wire import ReportFormatError, report_from_json

pytestmark = pytest.mark.unit


def simulated_report(image: str, seed: int) -> TuningReport:
    grid = {
        "method": "eagle3",
        "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "numSpeculativeTokens": [2, 3, 5],
    }
    spec = {
        "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
        "engine": {"image": image},
        "productionConcurrency": 128,
        "searchSpace": {"grids": [grid, {"method": "ngram", "numSpeculativeTokens": [3, 5]}]},
        "constraints": {"maxTailRatio": 2.0},  # a run that drops configs: a richer report
    }
    base = Scenario("a100", "A100", "llama-3.1-8b", "chat", spec)
    sim = SimulatedTuning(base, base.tuning_spec(), random.Random(seed))
    return build_report(sim.finish(), running={8: 1.0, 100: 2.0})


@pytest.mark.parametrize(
    ("image", "seed"), [("vllm/vllm-openai:v0.24.0", 1), ("vllm/vllm-openai:v0.23.0", 2)]
)
def test_round_trip_is_exact_and_renders_the_same_bytes(image: str, seed: int) -> None:
    report = simulated_report(image, seed)
    assert report.dropped, "the run should eliminate something: a richer report"
    assert list(report.labels) != sorted(report.labels), "key order must need restoring"
    back = report_from_json(to_json(report))
    assert back == report
    assert list(back.labels) == list(report.labels)
    assert list(back.break_even) == list(report.break_even)
    assert to_json(back) == to_json(report)
    assert markdown(back) == markdown(report)
    assert svg(back) == svg(report)
    assert sparklines(back) == sparklines(report)


def test_a_naive_reading_would_not_render_the_same() -> None:
    """The control: the sorted keys of report.json alone put break-even rows out of order."""
    report = simulated_report("vllm/vllm-openai:v0.24.0", 1)
    data = json.loads(to_json(report))
    assert list(data["break_even"]) == sorted(report.break_even) != list(report.break_even)


@pytest.mark.parametrize("text", ["", "{}", "[1, 2]", '{"rows": [{"config": "x"}]}', "not json"])
def test_anything_else_is_a_format_error(text: str) -> None:
    with pytest.raises(ReportFormatError, match="not a tuning report"):
        report_from_json(text)


def test_a_truncated_report_is_a_format_error() -> None:
    text = to_json(simulated_report("vllm/vllm-openai:v0.24.0", 1))
    with pytest.raises(ReportFormatError):
        report_from_json(text[: len(text) // 2])
