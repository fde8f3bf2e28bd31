"""Metric sources for the gates: one module per source behind the `AcceptanceSource` Protocol.

Chosen by `make_acceptance_source`, as Argo Rollouts picks a metric provider by name.
"""

from __future__ import annotations

from specdecode.adapters.metrics.prometheus import PrometheusAcceptance
from specdecode.adapters.metrics.protocol import AcceptanceSource, EngineSelector


def make_acceptance_source(kind: str, url: str, timeout_seconds: float) -> AcceptanceSource:
    """The acceptance source named by `kind` ("prometheus" is the only one so far)."""
    if kind == "prometheus":
        return PrometheusAcceptance(url, timeout_seconds)
    raise ValueError(f"unknown metric source {kind!r}; known: prometheus")


__all__ = ["AcceptanceSource", "EngineSelector", "PrometheusAcceptance", "make_acceptance_source"]
