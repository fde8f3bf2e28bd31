"""The PromQL the Prometheus source sends: exact `_total` names, the engine's pods, windows."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from specdecode.adapters.metrics.prometheus import (
    ACCEPTED,
    PrometheusMetrics,
    parse_step_count,
    parse_step_histogram,
    step_count_query,
    step_histogram_query,
    window_query,
)
from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.domain.observations import MetricError, StepHistogram

pytestmark = pytest.mark.unit

CANDIDATE = EngineSelector("team-a", "llama-candidate")


def test_counter_windows_use_the_exact_total_series_of_the_engines_pods() -> None:
    query = window_query(ACCEPTED, CANDIDATE, 90)
    assert query == (
        "sum(increase(vllm:spec_decode_num_accepted_tokens_total"
        '{namespace="team-a",pod=~"llama-candidate-[a-z0-9]+-[a-z0-9]+"}[90s]))'
    )
    assert "_created" not in query and '=~"vllm' not in query


def test_step_itl_buckets_are_the_window_increases_by_le() -> None:
    query = step_histogram_query(CANDIDATE, 60)
    assert query.startswith("sum by (le)(increase(")
    assert 'vllm:inter_token_latency_seconds_bucket{namespace="team-a"' in query
    assert query.endswith("[60s]))")
    assert "histogram_quantile" not in query


def _row(le: str, value: str) -> dict[str, Any]:
    return {"metric": {"le": le}, "value": [1767268800.0, value]}


def test_step_histogram_rows_are_sorted_by_bound_with_inf_last_and_nan_as_zero() -> None:
    rows = [_row("+Inf", "12.5"), _row("0.025", "NaN"), _row("0.01", "2"), _row("0.05", "12")]
    histogram = parse_step_histogram(rows)
    assert histogram.upper_bounds == (0.01, 0.025, 0.05, math.inf)
    assert histogram.cumulative_counts == (2.0, 0.0, 12.0, 12.5)
    assert histogram.total == 12.5


def test_no_step_itl_rows_is_an_empty_histogram_not_an_error() -> None:
    histogram = parse_step_histogram([])
    assert histogram.upper_bounds == () and histogram.total == 0.0


def test_equal_bounds_spelled_differently_are_merged() -> None:
    histogram = parse_step_histogram([_row("1", "3"), _row("1.0", "4"), _row("+Inf", "7")])
    assert histogram.upper_bounds == (1.0, math.inf)
    assert histogram.cumulative_counts == (7.0, 7.0)


def test_step_histogram_without_an_inf_bucket_is_rejected() -> None:
    with pytest.raises(ValueError, match="Inf"):
        parse_step_histogram([_row("0.01", "2")])


def test_engine_steps_are_the_window_increase_of_the_iteration_tokens_count() -> None:
    # vllm:iteration_tokens_total observes once per engine step: its _count counts steps.
    assert step_count_query(CANDIDATE, 60) == (
        "sum(increase(vllm:iteration_tokens_total_count"
        '{namespace="team-a",pod=~"llama-candidate-[a-z0-9]+-[a-z0-9]+"}[60s]))'
    )


def _scalar_row(value: str) -> dict[str, Any]:
    return {"metric": {}, "value": [1767268800.0, value]}


def test_a_missing_or_nan_step_count_is_unknown_not_zero() -> None:
    assert parse_step_count([_scalar_row("301.5")]) == 301.5
    assert parse_step_count([_scalar_row("0")]) == 0.0
    assert parse_step_count([]) is None  # older vLLM, or not scraped yet
    assert parse_step_count([_scalar_row("NaN")]) is None


def test_the_step_count_is_carried_by_the_histogram() -> None:
    rows = [_row("0.05", "4000"), _row("+Inf", "4210")]
    assert parse_step_histogram(rows, 301.0).steps == 301.0
    assert parse_step_histogram(rows).steps is None


END = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _answering(
    answers: dict[str, list[dict[str, Any]]], asked: list[tuple[str, dict[str, str]]]
) -> Any:
    def custom_query(promql: str, params: dict[str, str], timeout: float) -> list[dict[str, Any]]:
        asked.append((promql, params))
        return answers[promql]

    return custom_query


async def test_one_call_queries_the_buckets_and_the_steps_of_the_same_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metrics = PrometheusMetrics("http://prometheus:9090", timeout_seconds=5.0)
    answers = {
        step_histogram_query(CANDIDATE, 90): [_row("0.05", "4000"), _row("+Inf", "4210")],
        step_count_query(CANDIDATE, 90): [_scalar_row("301")],
    }
    asked: list[tuple[str, dict[str, str]]] = []
    monkeypatch.setattr(metrics._client, "custom_query", _answering(answers, asked))
    found = await metrics.step_itl_histogram(CANDIDATE, END - timedelta(seconds=90), END)
    assert found == StepHistogram((0.05, math.inf), (4000.0, 4210.0), steps=301.0)
    assert sorted(promql for promql, _ in asked) == sorted(answers)
    assert all(params == {"time": f"{END.timestamp():.3f}"} for _, params in asked)
    answers[step_count_query(CANDIDATE, 90)] = []
    unknown = await metrics.step_itl_histogram(CANDIDATE, END - timedelta(seconds=90), END)
    assert isinstance(unknown, StepHistogram) and unknown.steps is None


async def test_a_negative_step_count_is_a_metric_error(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = PrometheusMetrics("http://prometheus:9090", timeout_seconds=5.0)
    answers = {
        step_histogram_query(CANDIDATE, 90): [_row("+Inf", "10")],
        step_count_query(CANDIDATE, 90): [_scalar_row("-1")],
    }
    monkeypatch.setattr(metrics._client, "custom_query", _answering(answers, []))
    found = await metrics.step_itl_histogram(CANDIDATE, END - timedelta(seconds=90), END)
    assert isinstance(found, MetricError) and "steps" in found.message


def test_a_baseline_pod_never_matches_the_candidates_selector() -> None:
    pattern = re.compile(CANDIDATE.pod_regex)
    assert pattern.fullmatch("llama-candidate-7d9f8c6b5-x2x9z")
    assert not pattern.fullmatch("llama-baseline-7d9f8c6b5-x2x9z")
    assert not pattern.fullmatch("llama-7d9f8c6b5-x2x9z")


@pytest.mark.parametrize("row", [{"metric": {}}, {"value": []}, {"value": None}])
async def test_a_malformed_answer_is_a_metric_error_not_an_exception(
    monkeypatch: pytest.MonkeyPatch, row: dict[str, Any]
) -> None:
    metrics = PrometheusMetrics("http://prometheus:9090", timeout_seconds=5.0)
    monkeypatch.setattr(metrics._client, "custom_query", lambda *_, **__: [row])
    found = await metrics.acceptance(CANDIDATE, END - timedelta(seconds=90), END)
    assert isinstance(found, MetricError) and "malformed response" in found.message
