"""Metric sources for the gates (and the tuning's production histogram, `running`;
Mirror's request outcomes, `outcomes`): one module per source behind the Protocols in
`protocol`."""

from __future__ import annotations

from specdecode.adapters.metrics.access import PrometheusAccess
from specdecode.adapters.metrics.blocks import NoAcceptanceBlocks, PrometheusAcceptanceBlocks
from specdecode.adapters.metrics.outcomes import PrometheusRequestOutcomes, UnknownRequestOutcomes
from specdecode.adapters.metrics.prometheus import PrometheusMetrics
from specdecode.adapters.metrics.protocol import (
    AcceptanceBlocksSource,
    AcceptanceSource,
    EngineSelector,
    EngineSeriesSource,
    RequestOutcomeSource,
    RunningRequestsSource,
    StepLatencySource,
    TailBlocksSource,
)
from specdecode.adapters.metrics.running import PrometheusRunningRequests, UnknownRunningRequests
from specdecode.adapters.metrics.series import PrometheusEngineSeries, UnknownEngineSeries
from specdecode.adapters.metrics.tail_blocks import NoTailBlocks, PrometheusTailBlocks


def make_metric_source(
    kind: str, url: str, timeout_seconds: float, access: PrometheusAccess | None = None
) -> PrometheusMetrics:
    """The metric source named by `kind` ("prometheus" is the only one so far)."""
    if kind == "prometheus":
        return PrometheusMetrics(url, timeout_seconds, access)
    raise ValueError(f"unknown metric source {kind!r}; known: prometheus")


__all__ = [
    "AcceptanceBlocksSource",
    "AcceptanceSource",
    "EngineSelector",
    "EngineSeriesSource",
    "NoAcceptanceBlocks",
    "NoTailBlocks",
    "PrometheusAcceptanceBlocks",
    "PrometheusAccess",
    "PrometheusEngineSeries",
    "PrometheusMetrics",
    "PrometheusRequestOutcomes",
    "PrometheusRunningRequests",
    "PrometheusTailBlocks",
    "RequestOutcomeSource",
    "RunningRequestsSource",
    "StepLatencySource",
    "TailBlocksSource",
    "UnknownEngineSeries",
    "UnknownRequestOutcomes",
    "UnknownRunningRequests",
    "make_metric_source",
]
