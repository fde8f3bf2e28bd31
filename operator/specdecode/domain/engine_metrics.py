"""Engines Prometheus does not scrape: Degraded (MetricsUnavailable) within a minute.

Why: the gates read an empty answer as "no data yet" (Inconclusive), which hides a
Prometheus that never scrapes the engines; the rollout would run out its clock saying
nothing. A condition, not a rollback: what is wrong is the monitoring, not the config.
Pure and wire-free: the caller passes what Prometheus answered and what Degraded said
before; `pass_decision` lays the message over the status. More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from specdecode.domain.gates.registry import Need

METRICS_UNAVAILABLE = "MetricsUnavailable"
# A gauge every vLLM release (and the simulator) exports from start-up, 0 when idle: its
# presence says "this pod is scraped", whether or not it has drafted yet.
ENGINE_GAUGE = "vllm:num_requests_running"
ENGINE_METRIC_NEEDS = frozenset({Need.ACCEPTANCE_COUNTERS, Need.SERVER_STEP_HISTOGRAMS})
CHART_VALUE = "monitoring.enginePodMonitor.enabled"
NO_SERIES = "Prometheus has no series of the engine pods"  # how this check's message starts


@dataclass(frozen=True)
class EnginePod:
    """One shadow engine pod: its name and since when it has been Ready (None: not)."""

    name: str
    ready_since: datetime | None


def reads_engine_metrics(stage_needs: Iterable[frozenset[Need]]) -> bool:
    """Whether any stage's gates (what each stage's measured gates need) read vLLM's
    counters from Prometheus."""
    return any(needs & ENGINE_METRIC_NEEDS for needs in stage_needs)


def settled(pods: Iterable[EnginePod], now: datetime, grace: timedelta) -> tuple[str, ...]:
    """The pods Ready for at least `grace`: Prometheus has had time to scrape them."""
    return tuple(
        sorted(p.name for p in pods if p.ready_since is not None and now - p.ready_since >= grace)
    )


def settles_at(pods: Iterable[EnginePod], now: datetime, grace: timedelta) -> datetime | None:
    """The first instant after `now` at which a Ready pod becomes due for the check."""
    later = [p.ready_since + grace for p in pods if p.ready_since is not None]
    future = [instant for instant in later if instant > now]
    return min(future) if future else None


def presence_query(namespace: str, pods: Iterable[str]) -> str:
    """The PromQL that must return a series per scraped pod: the engine gauge, selected
    by the `namespace` and `pod` labels every engine query of the operator selects on."""
    names = "|".join(name.replace(".", "\\\\.") for name in sorted(pods))
    return f'{ENGINE_GAUGE}{{namespace="{namespace}",pod=~"{names}"}}'


def unavailable_message(query: str) -> str:
    """What came back empty and what to fix."""
    return (
        f"{NO_SERIES}: `{query}` returned nothing, so the "
        "gates that read vLLM's counters cannot judge. Prometheus must scrape the engine "
        "pods (their prometheus.io/port, path /metrics) with `namespace` and `pod` labels: "
        f"with the Prometheus Operator, the chart's PodMonitor ({CHART_VALUE}) must exist "
        "and match Prometheus's podMonitorSelector (kube-prometheus-stack: "
        "monitoring.enginePodMonitor.labels.release=<its release>) and "
        "podMonitorNamespaceSelector; with plain Prometheus, keep the pods' "
        "prometheus.io/scrape annotations in its scrape config"
    )


def metrics_unavailable(
    said: str | None,
    namespace: str,
    pods: Iterable[EnginePod],
    scraped: frozenset[str] | None,
    grace: timedelta,
    now: datetime,
) -> str | None:
    """Degraded's message (reason MetricsUnavailable) while a settled engine pod has no
    series (`scraped`: the pods Prometheus holds the gauge of; None: not known); None: say
    nothing. `said`: the message of the MetricsUnavailable the old status had True (None:
    none). The caller leaves a Degraded already True as it is (the phase's, or an earlier
    check's): the phase's own MetricsUnavailable too, a rollback after the gates' errors.

    Not known (Prometheus unreachable, or not asked) keeps a MetricsUnavailable said
    before, and says none: an unreachable Prometheus is the gates' Error, not this.
    """
    due = settled(pods, now, grace)
    if not due:
        return None
    if scraped is None:
        # the phase's MetricsUnavailable, of an earlier run, is not this check's
        return said if said is not None and said.startswith(NO_SERIES) else None
    missing = [name for name in due if name not in scraped]
    if not missing:
        return None
    return unavailable_message(presence_query(namespace, missing))
