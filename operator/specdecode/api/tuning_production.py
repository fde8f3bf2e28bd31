"""`spec.production` of a SpecDecodeTuning: where production runs, to weight the ladder by it.

A tuning measures every config at each load of its ladder; which one config to roll out
depends on how often production sits at each load. When the spec names production's
Deployment, the operator reads that Deployment's `vllm:num_requests_running` from Prometheus
over a window before it writes the report, and weights the ladder's bands by it
(`domain.tuning.recommend.band_weights`). Without it (or with no samples in the window) the
tuning falls back to `productionConcurrency`, then to equal weights; the report says which.
"""

from __future__ import annotations

from pydantic import Field

from specdecode.api.base import KubeModel

DEFAULT_WINDOW_SECONDS = 3600
MIN_WINDOW_SECONDS = 300  # a few scrapes: shorter is one moment, not a distribution
MAX_WINDOW_SECONDS = 30 * 86400  # a month: beyond that, retention and query cost


class ProductionSpec(KubeModel):
    """The Deployment whose pods serve production, in the tuning's namespace."""

    # A DNS-1123 label, not the wider subdomain a Deployment may have: the name becomes a
    # pod-name regex (`<deployment>-<hash>-<suffix>`), where a dot would match anything.
    deployment: str = Field(
        min_length=1,
        max_length=63,
        pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="Production's Deployment (for a SpecDecodeRollout: the rollout's name); "
        "its pods' vllm:num_requests_running weights the loads.",
    )
    window_seconds: int = Field(
        default=DEFAULT_WINDOW_SECONDS,
        ge=MIN_WINDOW_SECONDS,
        le=MAX_WINDOW_SECONDS,
        description="How far back from the report to read production's running requests "
        "(300 s to 30 days).",
    )
