"""The words the wire schema and the domain share: enums spelled as the CRD spells them.

Why below `api`: the gates and statistics must not import the wire schema (so a second API
version cannot reach into them), yet a gate's type, verdict and ITL definition are the same
words on both sides. Re-exported by `api`; another wire spelling maps at the boundary.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

# What a gate's `methods` and the fingerprint call plain decoding (speculative unset).
NO_SPECULATION: Final = "none"


class GateType(StrEnum):
    """What a gate measures."""

    ACCEPTANCE = "Acceptance"
    ACCEPTED_LENGTH = "AcceptedLength"
    TAIL_LATENCY = "TailLatency"
    SPEEDUP = "Speedup"
    ERROR_RATE = "ErrorRate"


class ItlDefinition(StrEnum):
    """Which inter-token latency a latency gate compares.

    PerChunk (the default) is the client's wall time between consecutive streamed chunks of
    a request, one chunk per engine step however many tokens it carries: the stall a reader
    of a streaming reply sees (what `vllm bench serve` calls ITL). PerToken divides each
    such gap by the tokens its chunk carried and weights it by them (a per-token pace; at
    the P99 it is the pace of the chunks that carried one token). Both are timed by the
    shadow load pods. ServerStep reads vLLM's own `inter_token_latency_seconds` histogram:
    the server's time between a request's consecutive steps, one observation per request
    per step, in coarse buckets; the only ITL there is when responses go elsewhere (Mirror).
    """

    PER_TOKEN = "PerToken"
    PER_CHUNK = "PerChunk"
    SERVER_STEP = "ServerStep"


class SpeedupMetric(StrEnum):
    """What a speedup gate compares between candidate and baseline."""

    TIME_PER_OUTPUT_TOKEN = "TimePerOutputToken"
    THROUGHPUT = "Throughput"


class GateVerdict(StrEnum):
    """One gate evaluation's outcome, as Argo Rollouts' AnalysisRun names them."""

    PENDING = "Pending"
    SUCCESSFUL = "Successful"
    FAILED = "Failed"
    INCONCLUSIVE = "Inconclusive"
    ERROR = "Error"
