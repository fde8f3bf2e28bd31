"""The candidate's alpha per traffic group, as a gauge: which traffic a config fails.

Set from status (`stages[].load.acceptanceByTraffic` of the stage that speaks for the
rollout, as every per-stage series of `telemetry`), so the dashboard shows exactly the
status's figures, never a second bookkeeping. Bounded: status holds at most
`MAX_TRAFFIC_GROUPS` groups per stage (the rest folded into `other`), one stage speaks at
a time, and a group that leaves status loses its series. A group whose alpha status
leaves empty (a Stream estimate when the look read no counters) has no series.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from specdecode.api.status import LoadStatus

# The dashboard's legend shows traffic_class, temperature and output_length: see its test.
TRAFFIC_LABELS = (
    "namespace",
    "rollout",
    "stage",
    "traffic_class",
    "temperature",
    "output_length",
    "bound",
)


class TrafficMetrics:
    """`specdecode_traffic_alpha`, on the operator's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.alpha = Gauge(
            "specdecode_traffic_alpha",
            "The candidate's draft acceptance rate per traffic group (class, temperature "
            "band, output length band) over the stage's window: bound = value, lower, upper "
            "(95 %, display only). Basis and requests are in status.",
            TRAFFIC_LABELS,
            registry=registry,
        )
        self._series: dict[tuple[str, str], set[tuple[str, ...]]] = {}

    def observe(
        self, namespace: str, rollout: str, stage: str | None, load: LoadStatus | None
    ) -> None:
        """The speaking stage's groups (None: no stage speaks, every series goes)."""
        current: set[tuple[str, ...]] = set()
        groups = load.acceptance_by_traffic if stage is not None and load is not None else []
        for group in groups:
            labels = (namespace, rollout, stage or "", group.traffic_class, group.temperature)
            for bound, value in (
                ("value", group.alpha),
                ("lower", group.lower_bound),
                ("upper", group.upper_bound),
            ):
                if value is not None:
                    series = (*labels, group.output_length, bound)
                    self.alpha.labels(*series).set(value)
                    current.add(series)
        for stale in self._series.get((namespace, rollout), set()) - current:
            self.alpha.remove(*stale)
        self._series[(namespace, rollout)] = current

    def forget(self, namespace: str, rollout: str) -> None:
        """A deleted rollout: all its series go."""
        self.observe(namespace, rollout, None, None)
        self._series.pop((namespace, rollout), None)
