"""What each non-free `vllm serve` destination means to the operator: the hand-written half
of the engine flag table (api/engine_flag_table.py).

Why a class per destination: extraArgs go to all three engines, so a flag that changes
every engine alike is free, but one that speculates, is rendered by the operator, stops
the gates' stats or makes engines unreachable would corrupt every verdict.
What was read in vLLM's source for each entry: docs/internals.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FlagClass(StrEnum):
    """What setting a destination does to a comparison of three engines."""

    SPECULATIVE = "speculative"  # reserved to spec.speculative
    OPERATOR_OWNED = "operator_owned"  # rendered by the operator from a spec field
    STATS_OFF = "stats_off"  # the engine stops exporting what the gates read
    UNJUDGEABLE = "unjudgeable"  # the load pods, probes or Prometheus cannot reach it
    FREE = "free"  # the user's: the same on all three engines


@dataclass(frozen=True)
class Classified:
    """A non-free destination: its class and where its value comes from (or why none)."""

    flag_class: FlagClass
    source: str


def _classified(flag_class: FlagClass, **sources: str) -> dict[str, Classified]:
    return {dest: Classified(flag_class, source) for dest, source in sources.items()}


SPECULATIVE_SOURCE = "spec.speculative"
CLASSIFIED: dict[str, Classified] = {
    **_classified(
        FlagClass.SPECULATIVE,
        speculative_config=SPECULATIVE_SOURCE,
        spec_method=f"{SPECULATIVE_SOURCE}: vLLM merges it into the config's method",
        spec_model=f"{SPECULATIVE_SOURCE}: vLLM merges it into the config's model",
        spec_tokens=f"{SPECULATIVE_SOURCE}: vLLM merges it into num_speculative_tokens",
    ),
    **_classified(
        FlagClass.OPERATOR_OWNED,
        model="spec.model.name",
        model_tag="spec.model.name",
        served_model_name="spec.model.servedModelName",
        revision="spec.model.revision",
        max_model_len="spec.model.maxModelLen",
        dtype="spec.model.dtype",
        tensor_parallel_size="spec.gpuPool.tensorParallelSize",
        gpu_memory_utilization="spec.engine.gpuMemoryUtilization",
        host="the operator (0.0.0.0)",
        port="spec.engine.port",
    ),
    **_classified(
        FlagClass.STATS_OFF,
        disable_log_stats="the operator: every gate reads the engine's stats",
        headless="the operator: no API server, so no /metrics",
    ),
    **_classified(
        FlagClass.UNJUDGEABLE,
        uds="the operator: a socket replaces host and port",
        config="the operator: a config file can set any flag",
        api_key="the operator: the load pods send no API key",
        grpc="the operator: a gRPC server replaces the OpenAI HTTP API",
        tokens_only="the operator: only the tokens endpoint is served",
        ssl_keyfile="the operator: the load pods, probes and Prometheus speak plain HTTP",
        ssl_certfile="the operator: the load pods, probes and Prometheus speak plain HTTP",
        help="the operator: vllm serve prints its help and exits",
    ),
}

# Free destinations a reviewer might take for speculation or for the gates' stats, each
# with what vLLM's source says it does. The table's unit test refuses a free destination
# whose name mentions spec, draft, stats or metric unless it is listed here.
FREE_BY_READING: dict[str, str] = {
    "per_request_spec_decode_metrics": "adds per-request acceptance to responses",
    "enable_per_request_metrics": "adds per-request timings to responses",
    "kv_cache_metrics": "exports extra KV-cache metrics",
    "kv_cache_metrics_sample": "sampling rate of the extra KV-cache metrics",
    "cudagraph_metrics": "exports extra CUDA-graph metrics",
    "enable_mfu_metrics": "exports extra model-FLOPs-utilisation metrics",
    "show_hidden_metrics_for_version": "re-exports metrics deprecated since a release",
    # 0.11.2 only (vllm/config/scheduler.py, engine/arg_utils.py): KV slots reserved per
    # step "used in speculative decoding"; a speculative config overrides it and V1
    # (vllm/v1/) never reads it, so it speculates nothing.
    "num_lookahead_slots": "V1 never reads it; a speculative config overrides it",
}
