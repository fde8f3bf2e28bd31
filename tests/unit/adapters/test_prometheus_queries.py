"""The PromQL the Prometheus source sends: exact `_total` names, the engine's pods, windows."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from specdecode.adapters.metrics.prometheus import (
    ACCEPTED,
    parse_step_histogram,
    step_histogram_query,
    window_query,
)
from specdecode.adapters.metrics.protocol import EngineSelector

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


def test_a_baseline_pod_never_matches_the_candidates_selector() -> None:
    pattern = re.compile(CANDIDATE.pod_regex)
    assert pattern.fullmatch("llama-candidate-7d9f8c6b5-x2x9z")
    assert not pattern.fullmatch("llama-baseline-7d9f8c6b5-x2x9z")
    assert not pattern.fullmatch("llama-7d9f8c6b5-x2x9z")
