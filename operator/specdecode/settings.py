"""Operator settings: one frozen value built from the command line and environment.

Kept out of module globals so tests can run two operators with different settings in one
process, and so every knob is documented in one place.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class OperatorSettings:
    """Everything the operator's behaviour depends on besides the resources themselves."""

    namespaces: tuple[str, ...] = ()
    """Namespaces to watch; empty means cluster-wide."""

    prometheus_url: str = "http://prometheus-operated.monitoring:9090"
    """Prometheus that scrapes the engines' vLLM metrics."""

    prometheus_timeout_seconds: float = 10.0
    """A query slower than this is a metric error (Error verdict), not a hang."""

    reconcile_interval_seconds: float = 5.0
    """How often every rollout is reconciled even without a change (the analysis clock)."""

    field_manager: str = "specdecode-operator"
    """Server-side apply field manager: we own only the fields we set."""

    metrics_port: int = 8080
    """Port of the operator's own /metrics (0 disables)."""

    metrics_host: str = "0.0.0.0"
    """Address the operator's /metrics binds."""

    load_image: str = "ghcr.io/specdecode-operator/operator:0.1.0"
    """Image of the shadow-load pods (`specdecode-load`) when a rollout names none: the
    operator's own image, which the chart passes in."""

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
            reconcile_interval_seconds=float(
                env.get("SPECDECODE_RECONCILE_INTERVAL", cls.reconcile_interval_seconds)
            ),
            load_image=env.get("SPECDECODE_LOAD_IMAGE", cls.load_image),
            metrics_port=int(env.get("SPECDECODE_METRICS_PORT", cls.metrics_port)),
            metrics_host=env.get(
                "SPECDECODE_METRICS_HOST", env.get("SPECDECODE_BIND_HOST", cls.metrics_host)
            ),
        )
