"""`stages[].load.acceptanceByTraffic`: the candidate's acceptance split by traffic labels.

Why in status: a speculative config rarely fails on all traffic alike. On-call needs to
see which part of the prompt set it fails (a workload class, a temperature band, long
answers) next to the gate that failed, without a Prometheus at hand. The labels and their
bands are defined once, in `domain/traffic_groups.py` (see README, "Acceptance by
traffic"); the estimates are computed in `domain/acceptance_split.py`. Bounded: at most
`MAX_TRAFFIC_GROUPS` entries per stage, the smallest groups folded into `other`.
"""

from __future__ import annotations

from pydantic import Field

from specdecode.api.base import KubeModel

# Re-exported: the wire spells it as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import MAX_TRAFFIC_GROUPS as MAX_TRAFFIC_GROUPS  # noqa: PLC0414
from specdecode.vocabulary import AcceptanceBasis as AcceptanceBasis  # noqa: PLC0414


class TrafficAcceptance(KubeModel):
    """One traffic group's acceptance on the candidate over the stage's measuring window."""

    traffic_class: str = Field(
        max_length=40,
        description="The prompt line's class (its `class`, else its `workload`, else the "
        "built-in set's workload class), `unlabelled`, or `other` (folded groups).",
    )
    temperature: str = Field(
        max_length=40, description="Sampling temperature band: greedy, low, high (or other)."
    )
    output_length: str = Field(
        max_length=40, description="Band of the request's max_tokens: short, medium, long."
    )
    requests: int = Field(description="Finished requests of this group in the window.")
    steps: int = Field(
        description="Decode steps behind the estimate: streamed chunks after each request's "
        "first (Stream), or the engine's verify steps (Engine)."
    )
    accepted_per_step: float | None = Field(
        default=None, description="Accepted draft tokens per decode step."
    )
    alpha: float | None = Field(
        default=None,
        description="Draft acceptance rate: the engine's accepted / draft tokens (Engine), "
        "or acceptedPerStep / the candidate's mean draft length from its counters (Stream; "
        "empty when the look read no counters).",
    )
    lower_bound: float | None = Field(
        default=None,
        description="alpha's 95 % two-sided lower bound, clustered over requests (display "
        "only: no verdict rests on a group).",
    )
    upper_bound: float | None = Field(default=None, description="alpha's upper bound.")
    basis: AcceptanceBasis = Field(
        default=AcceptanceBasis.STREAM,
        description="Stream: tokens per streamed chunk, biased up when the server merges "
        "steps into one chunk (a lagging client); Engine: vLLM's per-request metrics "
        "(--per-request-spec-decode-metrics), used whenever they were reported.",
    )
