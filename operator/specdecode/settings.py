"""Operator settings: one frozen value built from the command line and environment.

Kept out of module globals so tests can run two operators with different settings in one
process, and so every knob is documented in one place.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from specdecode.adapters.kube.client import CONNECT_ATTEMPTS, Deadlines

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class OperatorSettings:
    """Everything the operator's behaviour depends on besides the resources themselves."""

    namespaces: tuple[str, ...] = ()
    """Namespaces to watch; empty means cluster-wide."""

    prometheus_url: str = "http://prometheus-operated.monitoring:9090"
    """Prometheus that scrapes the engines' vLLM metrics."""

    prometheus_timeout_seconds: float = 10.0
    """A query slower than this is a metric error (Error verdict), not a hang."""

    prometheus_ca_file: str | None = None
    """PEM CA bundle that signs an https Prometheus's certificate (default: the system's)."""

    prometheus_bearer_token_file: str | None = None
    """File whose bearer token is sent with every Prometheus query (re-read each time)."""

    prometheus_insecure_skip_verify: bool = False
    """Do not verify an https Prometheus's certificate (test servers only)."""

    engine_scrape_grace_seconds: float = 35.0
    """How long a shadow engine pod is Ready before the operator expects Prometheus to hold
    its series; none then: the rollout is Degraded (MetricsUnavailable). Two 15 s scrape
    intervals and some discovery lag; the rollout's loop wakes when it ends, so the
    condition is up well within 60 s of the engines being Ready. Set it above twice a
    longer scrape interval; 0 turns the check off."""

    engine_scrape_interval_seconds: float = 15.0
    """How often Prometheus scrapes the engines (the chart's PodMonitor: 5 s). The drift
    guard's time blocks last at least four of these, or `increase()` finds one sample in a
    block and the guard sees nothing."""

    reconcile_interval_seconds: float = 5.0
    """The analysis clock: how often a rollout in Pending, Deploying, Analyzing or Promoting
    is reconciled without a change (looks, warm-ups and deadlines are due on it)."""

    resync_seconds: float = 600.0
    """How often an idle rollout (Promoted, RolledBack, Paused, Failed, Degraded) is
    reconciled without a change. Changes arrive as watch events; this only bounds the
    damage of a missed one. Reads only the watched cache, so it sends nothing when in sync."""

    identity: str = field(default_factory=socket.gethostname)
    """This replica's name (the pod name): the Lease holder and the Events' reporter."""

    leader_election: bool = False
    """Hold a Lease before reconciling, so that of several replicas exactly one works."""

    lease_name: str = "specdecode-operator"
    """The coordination.k8s.io Lease the replicas compete for."""

    lease_namespace: str = "default"
    """Namespace of the Lease (the operator's own namespace in a pod)."""

    lease_duration_seconds: float = 30.0
    """A leader that has not renewed for this long is presumed dead; a standby takes over."""

    lease_renew_seconds: float = 10.0
    """How often the leader renews the Lease (one PUT each time)."""

    lease_retry_seconds: float = 5.0
    """How often a standby reads the Lease to see whether it is free (one GET each time)."""

    api_connect_seconds: float = 2.0
    """How long one attempt to connect to the API server may take (TLS handshake included)."""

    api_request_seconds: float = 5.0
    """The API server's deadline for each request (sent as its `timeout` parameter, so the
    server drops a write it could not finish in time) and the client's wait for the answer.
    Fencing needs every request to end before a standby may take the Lease over: see
    `fencing_problem`."""

    field_manager: str = "specdecode-operator"
    """Server-side apply field manager: we own only the fields we set."""

    metrics_port: int = 8080
    """Port of the operator's own /metrics (0 disables)."""

    metrics_host: str = "0.0.0.0"
    """Address the operator's /metrics binds."""

    load_image: str = "ghcr.io/specdecode-operator/operator:0.1.0"
    """Image of the shadow-load pods (`specdecode-load`) when a rollout names none: the
    operator's own image, which the chart passes in."""

    def api_deadlines(self) -> Deadlines:
        """The operator's API requests' deadlines: the server gives up first, the client
        waits a second longer so it reads the server's own timeout answer."""
        return Deadlines(
            connect=self.api_connect_seconds,
            read=self.api_request_seconds + 1.0,
            server=self.api_request_seconds,
        )

    def request_lifetime_seconds(self) -> float:
        """The longest a request may live after the fence let it out: every connect attempt
        (one plus the client's connect retries) and then the server's deadline."""
        return CONNECT_ATTEMPTS * self.api_connect_seconds + self.api_request_seconds

    def fencing_problem(self) -> str | None:
        """Why these settings cannot fence a leader, or None. The leader stops sending a
        renewal period before a standby may take over (`handlers.leadership.fence_at`), so
        each request, kopf's included, must have ended within that period."""
        if min(self.api_connect_seconds, self.api_request_seconds) <= 0:
            return "the API connect and request deadlines must be positive"
        lifetime = self.request_lifetime_seconds()
        if lifetime >= self.lease_renew_seconds:
            return (
                f"an API request may live {lifetime:g} s ({CONNECT_ATTEMPTS} connect attempts "
                f"of {self.api_connect_seconds:g} s and a {self.api_request_seconds:g} s "
                "deadline), "
                f"not less than the {self.lease_renew_seconds:g} s between the fence and a "
                "standby's take-over: lower SPECDECODE_API_REQUEST_SECONDS"
            )
        if self.lease_duration_seconds <= 2 * self.lease_renew_seconds:
            return (
                f"lease duration {self.lease_duration_seconds:g} s leaves no time to renew: it "
                f"must exceed twice the renewal period ({self.lease_renew_seconds:g} s)"
            )
        return None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> OperatorSettings:
        """Settings from `SPECDECODE_*` environment variables (the chart sets these)."""
        env = dict(os.environ if environ is None else environ)
        namespaces = tuple(n for n in env.get("SPECDECODE_NAMESPACES", "").split(",") if n)
        return cls(
            namespaces=namespaces,
            prometheus_url=env.get("SPECDECODE_PROMETHEUS_URL", cls.prometheus_url),
            prometheus_timeout_seconds=float(
                env.get("SPECDECODE_PROMETHEUS_TIMEOUT", cls.prometheus_timeout_seconds)
            ),
            prometheus_ca_file=env.get("SPECDECODE_PROMETHEUS_CA_FILE") or None,
            prometheus_bearer_token_file=env.get("SPECDECODE_PROMETHEUS_BEARER_TOKEN_FILE") or None,
            prometheus_insecure_skip_verify=env.get(
                "SPECDECODE_PROMETHEUS_INSECURE_SKIP_VERIFY", ""
            ).lower()
            in TRUE_WORDS,
            engine_scrape_grace_seconds=float(
                env.get("SPECDECODE_ENGINE_SCRAPE_GRACE_SECONDS", cls.engine_scrape_grace_seconds)
            ),
            engine_scrape_interval_seconds=float(
                env.get(
                    "SPECDECODE_ENGINE_SCRAPE_INTERVAL_SECONDS", cls.engine_scrape_interval_seconds
                )
            ),
            api_request_seconds=float(
                env.get("SPECDECODE_API_REQUEST_SECONDS", cls.api_request_seconds)
            ),
            reconcile_interval_seconds=float(
                env.get("SPECDECODE_RECONCILE_INTERVAL", cls.reconcile_interval_seconds)
            ),
            load_image=env.get("SPECDECODE_LOAD_IMAGE", cls.load_image),
            resync_seconds=float(env.get("SPECDECODE_RESYNC_SECONDS", cls.resync_seconds)),
            identity=env.get("POD_NAME") or socket.gethostname(),
            leader_election=env.get("SPECDECODE_LEADER_ELECTION", "").lower() in TRUE_WORDS,
            lease_name=env.get("SPECDECODE_LEASE_NAME", cls.lease_name),
            lease_namespace=env.get("POD_NAMESPACE", cls.lease_namespace),
            metrics_port=int(env.get("SPECDECODE_METRICS_PORT", cls.metrics_port)),
            metrics_host=env.get(
                "SPECDECODE_METRICS_HOST", env.get("SPECDECODE_BIND_HOST", cls.metrics_host)
            ),
        )
