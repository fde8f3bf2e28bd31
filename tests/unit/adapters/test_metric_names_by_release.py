"""Every Prometheus series the operator queries exists, with the labels it reads, in every
supported vLLM release (facts read from the wheels: `vllm_versions.METRICS`), so one set
of queries serves 0.11.2 to 0.33.x; the one series that changed (the old per-step ITL
name, gone in 0.15) is not among them."""

from __future__ import annotations

import pytest

from specdecode.adapters.metrics import outcomes, prometheus, running
from specdecode.api.vllm_versions import ALL, METRICS
from specdecode.domain.observations import REQUEST_OUTCOMES_SERIES

pytestmark = pytest.mark.unit

QUERIED = {
    "drafts": prometheus.DRAFTS,
    "draft_tokens": prometheus.DRAFT_TOKENS,
    "accepted": prometheus.ACCEPTED,
    "accepted_per_position": prometheus.ACCEPTED_PER_POSITION,
    "finished_requests": prometheus.FINISHED_REQUESTS,
    "step_itl": prometheus.STEP_ITL_BUCKETS,
    "engine_steps": prometheus.ENGINE_STEPS,
    "request_length": prometheus.REQUEST_LENGTH_BUCKETS,
    "requests_running": outcomes.IN_FLIGHT[0],
    "requests_waiting": outcomes.IN_FLIGHT[1],
}


def test_every_module_queries_the_same_spelling() -> None:
    assert outcomes.IN_FLIGHT[0] == running.RUNNING
    assert REQUEST_OUTCOMES_SERIES == prometheus.FINISHED_REQUESTS


@pytest.mark.parametrize("key", sorted(QUERIED))
def test_queried_series_exist_in_every_supported_release(key: str) -> None:
    facts = METRICS[key]
    assert facts.span == ALL
    # Histograms are queried through a suffix of the family's name.
    assert QUERIED[key] in {facts.name, f"{facts.name}_bucket", f"{facts.name}_count"}


def test_per_position_label_and_removed_series() -> None:
    assert "position" in METRICS["accepted_per_position"].labels
    removed = METRICS["time_per_output_token"]
    assert removed.span.last == 14
    assert all(removed.name not in name for name in QUERIED.values())
