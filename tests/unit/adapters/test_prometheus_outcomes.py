"""Mirror's request outcomes against a loopback server speaking Prometheus' query API.

`PrometheusRequestOutcomes.request_outcomes` must ask for vLLM's outcome counter by
`finished_reason` over the stage's window, its resets, and the in-flight gauges at both
ends of the window, each into its own field; no series is unknown (`scraped` False), and a
refused answer is a MetricError. The PromQL is written out by hand from vLLM's names
(loggers.py: `vllm:request_success` with `finished_reason`; `vllm:num_requests_running`,
`vllm:num_requests_waiting`), never built with the adapter's own helpers.
"""

from __future__ import annotations

import pytest
from test_prometheus_acceptance import (  # the loopback Prometheus of the acceptance tests
    END,
    PODS,
    SAMPLE_TIME,
    START,
    FakePrometheus,
    prometheus,  # noqa: F401 (a fixture)
    scalar,
)

from specdecode.adapters.metrics.outcomes import PrometheusRequestOutcomes
from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.domain.observations import EngineOutcomes, MetricError

pytestmark = pytest.mark.unit

CANDIDATE = EngineSelector("team-a", "llama-candidate")
OUTCOMES = f"sum by (finished_reason)(increase(vllm:request_success_total{{{PODS}}}[90s]))"
RESETS = f"sum(resets(vllm:request_success_total{{{PODS}}}[90s]))"
IN_FLIGHT = f"sum(vllm:num_requests_running{{{PODS}}}) + sum(vllm:num_requests_waiting{{{PODS}}})"


def by_reason(values: dict[str, str]) -> list[dict[str, object]]:
    return [
        {"metric": {"finished_reason": reason}, "value": [SAMPLE_TIME, value]}
        for reason, value in values.items()
    ]


async def test_each_reason_resets_and_in_flight_land_in_their_fields(
    prometheus: tuple[FakePrometheus, str],  # noqa: F811
) -> None:
    fake, url = prometheus
    fake.answers = {
        OUTCOMES: by_reason({"stop": "270", "length": "20", "error": "30", "abort": "4"}),
        RESETS: scalar("0"),
        IN_FLIGHT: scalar("7"),
    }
    found = await PrometheusRequestOutcomes(url, 5.0).request_outcomes(CANDIDATE, START, END)
    assert isinstance(found, EngineOutcomes)
    assert found.scraped and found.failed == 34 and found.total == 324
    assert found.by_reason["error"] == 30.0 and found.restarts == 0.0
    # the same in-flight query at both ends: the end's and the start's evaluation times
    times = sorted(time for query, time in fake.asked if query == IN_FLIGHT)
    assert times == [f"{START.timestamp():.3f}", f"{END.timestamp():.3f}"]
    assert found.in_flight == 7.0 and found.in_flight_at_start == 7.0
    assert {time for query, time in fake.asked if query != IN_FLIGHT} == {f"{END.timestamp():.3f}"}


async def test_a_restart_and_no_series_are_told_apart_from_zero_failures(
    prometheus: tuple[FakePrometheus, str],  # noqa: F811
) -> None:
    fake, url = prometheus
    source = PrometheusRequestOutcomes(url, 5.0)
    unknown = await source.request_outcomes(CANDIDATE, START, END)
    assert unknown == EngineOutcomes()  # no series: not scraped, never "0 failed"
    fake.answers = {OUTCOMES: by_reason({"stop": "100"}), RESETS: scalar("1")}
    restarted = await source.request_outcomes(CANDIDATE, START, END)
    assert isinstance(restarted, EngineOutcomes) and restarted.restarts == 1.0


async def test_a_refused_answer_is_a_metric_error(
    prometheus: tuple[FakePrometheus, str],  # noqa: F811
) -> None:
    fake, url = prometheus
    fake.refuse_with = (503, "unavailable")
    found = await PrometheusRequestOutcomes(url, 5.0).request_outcomes(CANDIDATE, START, END)
    assert isinstance(found, MetricError) and url in found.source
