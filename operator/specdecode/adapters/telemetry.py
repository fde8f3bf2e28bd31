"""The operator's own Prometheus metrics: what dashboards and alerts read.

Gauges are set from each reconcile's computed status (never a second bookkeeping), on the
Runtime's registry; per-stage series exist only for the stage that speaks for the rollout,
so a dashboard never shows a stale verdict as current. Also reconcile and API health.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from specdecode.adapters.traffic_metrics import TrafficMetrics
from specdecode.adapters.tuning_metrics import TuningMetrics
from specdecode.api.status import (
    GateResult,
    GateVerdict,
    Phase,
    SpecDecodeRolloutStatus,
    StagePhase,
)
from specdecode.api.tuning_status import SpecDecodeTuningStatus
from specdecode.domain.drift import DriftCheck
from specdecode.domain.gate_measures import SATURATION_SIDES
from specdecode.domain.gates import Headline, is_headline, measure_for
from specdecode.domain.gates.tail_latency import saturated_side
from specdecode.domain.tuning.report import TuningReport

ANALYSIS_BUCKETS = (60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 14400)
RECONCILE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# Phases whose current stage is live: its gate series are current, every other stage's go.
LIVE_STAGE_PHASES = frozenset({Phase.ANALYZING, Phase.PAUSED})
# Phases after a verdict: the deciding stage (the last one that ran) keeps its series.
DECIDED_PHASES = frozenset({Phase.PROMOTING, Phase.PROMOTED, Phase.ROLLED_BACK})
# Phases in which production runs the config a drift was found on.
DRIFTING_PHASES = frozenset({Phase.PROMOTED, Phase.DEGRADED})
REANALYSIS_PHASES = frozenset({Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED, Phase.PROMOTING})
# Every per-rollout series is labelled by these first.
ROLLOUT_LABELS = ("namespace", "rollout")


class OperatorMetrics:
    """Per-rollout phase, gate verdicts, alpha, P99 ITL, rollbacks, analysis duration."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.phase = self._rollout_gauge(
            "specdecode_rollout_phase", "1 for the rollout's current phase.", "phase"
        )
        self.gate_verdict = self._rollout_gauge(
            "specdecode_gate_verdict",
            "1 for each gate's latest verdict.",
            "stage",
            "gate",
            "verdict",
        )
        self.alpha = self._rollout_gauge(
            "specdecode_alpha",
            "Candidate draft acceptance rate (point estimate and bounds).",
            "stage",
            "bound",
        )
        self.itl = self._rollout_gauge(
            "specdecode_itl_quantile_seconds",
            "Client-side ITL quantile per engine.",
            "stage",
            "role",
        )
        self.load_delay = self._rollout_gauge(
            "specdecode_load_client_delay_p99_seconds",
            "P99 of the shadow-load clients' own timestamp delay (worst side) at the last look.",
            "stage",
        )
        self.load_requests = self._rollout_gauge(
            "specdecode_load_window_requests",
            "Shadow requests finished in the stage's measuring window, both sides.",
            "stage",
        )
        # What SpecDecodeLoadSaturated reads: the TailLatency and Speedup gates refuse a look
        # whose load client lagged or fell behind an open-loop rate (status says so in the
        # gate's reason); 0 for a side that did not.
        self.load_saturated = self._rollout_gauge(
            "specdecode_load_saturated",
            "1 when the stage's last TailLatency or Speedup look was Inconclusive because this "
            "side's shadow-load client delayed its own timestamps or fell behind the stage's "
            "request rate (shadow load saturated), else 0.",
            "stage",
            "role",
        )
        self.drifted = self._rollout_gauge(
            "specdecode_drifted",
            "1 while production runs a config whose acceptance the drift guard found below "
            "its threshold, or whose server-side step-ITL tail it found past its line (the "
            "Drifted condition's reason says which).",
        )
        self.production_alpha = self._rollout_gauge(
            "specdecode_production_alpha",
            "Production's draft acceptance rate at the drift guard's latest look with data "
            "(bound: value, lower, upper, threshold).",
            "bound",
        )
        self.rollbacks = Counter(
            "specdecode_rollbacks",
            "Analyses that ended in RolledBack.",
            [*ROLLOUT_LABELS, "reason"],
            registry=self.registry,
        )
        # What SpecDecodeRolledBack reads: a counter born at 1 is invisible to increase(),
        # and "absent 15 minutes ago" also holds after any scrape gap; a timestamp is neither.
        self.last_rollback = self._rollout_gauge(
            "specdecode_last_rollback_timestamp_seconds",
            "When the rollout last rolled back (unix seconds), by reason.",
            "reason",
        )
        self.analysis_duration = Histogram(
            "specdecode_analysis_duration_seconds",
            "From analysis start to verdict.",
            [*ROLLOUT_LABELS, "verdict"],
            buckets=ANALYSIS_BUCKETS,
            registry=self.registry,
        )
        self.reconcile_duration = Histogram(
            "specdecode_operator_reconcile_duration_seconds",
            "Duration of one reconcile of one rollout, by outcome (ok, stale, error).",
            ["outcome"],
            buckets=RECONCILE_BUCKETS,
            registry=self.registry,
        )
        self.leader = Gauge(
            "specdecode_operator_leader",
            "1 while this replica reconciles (holds the Lease, or runs without election).",
            registry=self.registry,
        )
        self.api_requests = Counter(
            "specdecode_operator_api_requests",
            "Requests the reconciler sent to the Kubernetes API server, by HTTP verb "
            "(kopf's own watches are not included).",
            ["verb"],
            registry=self.registry,
        )
        self.copies_let_go = Counter(
            "specdecode_operator_copies_let_go",
            "New objects' first copies the loop let go, waiting for kopf's own write.",
            registry=self.registry,
        )
        self.tunings = TuningMetrics(self.registry)
        self.traffic = TrafficMetrics(self.registry)

    def _rollout_gauge(self, name: str, documentation: str, *labels: str) -> Gauge:
        """A gauge per rollout on this registry: labelled ROLLOUT_LABELS, then `labels`."""
        return Gauge(name, documentation, [*ROLLOUT_LABELS, *labels], registry=self.registry)

    def tuning_reported(
        self, namespace: str, name: str, report: TuningReport, status: SpecDecodeTuningStatus
    ) -> None:
        """A tuning's report was written: its speedup per cell, GPU-seconds, configs left."""
        self.tunings.reported(namespace, name, report, status)

    def tuning_forgotten(self, namespace: str, name: str) -> None:
        """A tuning was deleted: every series of it goes."""
        self.tunings.forgotten(namespace, name)

    def count_request(self, verb: str) -> None:
        """One request to the API server (called by the Kubernetes client for each)."""
        self.api_requests.labels(verb).inc()

    def copy_let_go(self) -> None:
        """A loop let a new object's first copy go (kopf is about to write it)."""
        self.copies_let_go.inc()

    def reconciled(self, outcome: str, seconds: float) -> None:
        """One reconcile finished with `outcome` after `seconds`."""
        self.reconcile_duration.labels(outcome).observe(seconds)

    def serve(self, host: str, port: int) -> None:
        """Expose /metrics on host:port (a daemon thread of prometheus_client)."""
        start_http_server(port, addr=host, registry=self.registry)

    def observe(
        self,
        namespace: str,
        rollout: str,
        old: SpecDecodeRolloutStatus,
        new: SpecDecodeRolloutStatus,
    ) -> None:
        """Reflect a freshly computed status; count transitions into a verdict once."""
        for phase in Phase:
            self.phase.labels(namespace, rollout, phase.value).set(float(new.phase is phase))
        # Only while production still runs the drifted config (not after onDrift: Rollback,
        # which SpecDecodeRolledBack announces): the alert asks for action that is left.
        # ... or while a re-analysis of it runs (onDrift: Reanalyze): production is off it,
        # but nobody has decided yet whether it may come back.
        reanalysing = new.reanalysed is not None and new.phase in REANALYSIS_PHASES
        running_drifted = new.drift is not None and (new.phase in DRIFTING_PHASES or reanalysing)
        self.drifted.labels(namespace, rollout).set(float(running_drifted))
        live = _speaking_stage(new)
        speaking = next((stage for stage in new.stages if stage.name == live), None)
        self.traffic.observe(namespace, rollout, live, speaking.load if speaking else None)
        for stage in new.stages:
            if stage.name != live:
                continue
            for gate in stage.gates:
                for verdict in GateVerdict:
                    self.gate_verdict.labels(
                        namespace, rollout, stage.name, gate.name, verdict.value
                    ).set(float(gate.verdict is verdict))
                self._gate_values(namespace, rollout, stage.name, gate)
            self._saturation(namespace, rollout, stage.name, stage.gates)
            if stage.load is not None:
                self.load_requests.labels(namespace, rollout, stage.name).set(stage.load.requests)
                if stage.load.client_delay_p99_ms is not None:
                    delay = stage.load.client_delay_p99_ms / 1000
                    self.load_delay.labels(namespace, rollout, stage.name).set(delay)
        for name in {s.name for s in (*old.stages, *new.stages)} - {live}:
            self._forget_stage(namespace, rollout, name)
        if new.phase is not old.phase and new.phase in (Phase.PROMOTED, Phase.ROLLED_BACK):
            if new.phase is Phase.ROLLED_BACK:
                self.rollbacks.labels(namespace, rollout, _reason(new)).inc()
                if new.phase_since is not None:
                    when = new.phase_since.timestamp()
                    self.last_rollback.labels(namespace, rollout, _reason(new)).set(when)
            if new.analysis_started_at is not None and new.phase_since is not None:
                seconds = (new.phase_since - new.analysis_started_at).total_seconds()
                self.analysis_duration.labels(namespace, rollout, new.phase.value).observe(
                    max(seconds, 0.0)
                )

    def forget(self, namespace: str, rollout: str) -> None:
        """Drop a deleted rollout's series so dashboards don't show ghosts."""
        metrics = (
            self.phase,
            *self._per_stage(),
            self.rollbacks,
            self.last_rollback,
            self.drifted,
            self.production_alpha,
        )
        for metric in (*metrics, self.analysis_duration):
            metric.remove_by_labels({"namespace": namespace, "rollout": rollout})
        self.traffic.forget(namespace, rollout)

    def production_looked(
        self, namespace: str, rollout: str, check: DriftCheck, threshold: float
    ) -> None:
        """The guard's look at production's acceptance (every look with data, drifted or
        not: a gauge costs no API write)."""
        if check.alpha is None or check.lower is None or check.upper is None:
            return
        values = {"value": check.alpha, "lower": check.lower, "upper": check.upper}
        for bound, value in {**values, "threshold": threshold}.items():
            self.production_alpha.labels(namespace, rollout, bound).set(value)

    def _per_stage(self) -> tuple[Gauge, ...]:
        """The series labelled by stage (a stage's are dropped with it)."""
        return (
            self.gate_verdict,
            self.alpha,
            self.itl,
            self.load_delay,
            self.load_requests,
            self.load_saturated,
        )

    def _forget_stage(self, namespace: str, rollout: str, stage: str) -> None:
        for metric in self._per_stage():
            metric.remove_by_labels({"namespace": namespace, "rollout": rollout, "stage": stage})

    def _saturation(
        self, namespace: str, rollout: str, stage: str, gates: list[GateResult]
    ) -> None:
        """Per side, whether the stage's TailLatency or Speedup look refused its load client
        (lagging timestamps, or an open-loop sender behind its rate); only for a stage
        with such a gate: no other gate compares the two sides' client timings."""
        tail = [gate for gate in gates if measure_for(gate.type).compares_client_timings]
        if not tail:
            return
        saturated = {
            saturated_side(gate.reason) for gate in tail if gate.verdict is GateVerdict.INCONCLUSIVE
        }
        for role in SATURATION_SIDES:
            self.load_saturated.labels(namespace, rollout, stage, role).set(
                float(role in saturated)
            )

    def _gate_values(self, namespace: str, rollout: str, stage: str, gate: GateResult) -> None:
        if is_headline(gate.type, Headline.ALPHA):
            for bound, value in (
                ("value", gate.value),
                ("lower", gate.lower_bound),
                ("upper", gate.upper_bound),
            ):
                if value is not None:
                    self.alpha.labels(namespace, rollout, stage, bound).set(value)
        elif is_headline(gate.type, Headline.TAIL):
            for role, value in (
                ("baseline", gate.baseline_value),
                ("candidate", gate.candidate_value),
            ):
                if value is not None:
                    self.itl.labels(namespace, rollout, stage, role).set(value)


def _speaking_stage(status: SpecDecodeRolloutStatus) -> str | None:
    """The stage whose gate series are current: the one in progress, or after a verdict
    the last stage that ran (the one that passed last, or failed); None before any."""
    if status.phase in LIVE_STAGE_PHASES:
        return status.current_stage
    if status.phase in DECIDED_PHASES:
        ran = [stage.name for stage in status.stages if stage.phase is not StagePhase.PENDING]
        return ran[-1] if ran else None
    return None


def _reason(status: SpecDecodeRolloutStatus) -> str:
    degraded = next((c for c in status.conditions if c.type == "Degraded"), None)
    return degraded.reason if degraded is not None else "Unknown"
