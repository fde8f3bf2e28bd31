"""The PromQL the Prometheus source sends: exact `_total` names, the engine's pods, windows."""

from __future__ import annotations

import re

import pytest

from specdecode.adapters.metrics.prometheus import (
    ACCEPTED,
    step_quantile_query,
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


def test_step_itl_quantile_comes_from_the_bucket_increases_by_le() -> None:
    query = step_quantile_query(CANDIDATE, 60, 0.99)
    assert query.startswith("histogram_quantile(0.99, sum by (le)(increase(")
    assert 'vllm:inter_token_latency_seconds_bucket{namespace="team-a"' in query
    assert query.endswith("[60s])))")


def test_a_baseline_pod_never_matches_the_candidates_selector() -> None:
    pattern = re.compile(CANDIDATE.pod_regex)
    assert pattern.fullmatch("llama-candidate-7d9f8c6b5-x2x9z")
    assert not pattern.fullmatch("llama-baseline-7d9f8c6b5-x2x9z")
    assert not pattern.fullmatch("llama-7d9f8c6b5-x2x9z")
