"""From parsed CLI + settings to a validated engine plan, failing the way vLLM fails at start.

Every check here runs before the port is bound; a failure is rendered like vLLM's
exception line on stderr and the process exits 1.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from specdecode_sim.acceptance import head_key, rates_for_mean_length
from specdecode_sim.engine import EngineConfig, SpecPlan
from specdecode_sim.profiles import (
    GIB,
    HARDWARE,
    MODELS,
    HardwareProfile,
    ModelProfile,
    infer_model_profile,
    with_overrides,
)
from specdecode_sim.settings import SimSettings
from specdecode_sim.specconfig import SpeculativeConfig, TargetModel, build_speculative_config
from specdecode_sim.steptime import kv_capacity_tokens
from specdecode_sim.textgen import RepetitionProfile, repetition_table


class StartupError(Exception):
    """The engine would not start; `rendered` goes to stderr verbatim."""

    def __init__(self, rendered: str) -> None:
        super().__init__(rendered)
        self.rendered = rendered


@dataclass(frozen=True)
class EnginePlan:
    """Everything needed to start serving."""

    engine: EngineConfig
    model_path: str
    served_names: list[str]
    host: str
    port: int
    log_stats: bool
    api_keys: list[str]
    repetition: dict[str, RepetitionProfile]


def _profiles(model_path: str, settings: SimSettings) -> tuple[HardwareProfile, ModelProfile]:
    try:
        hardware = with_overrides(HARDWARE[settings.gpu], dict(settings.hardware_overrides))
        base = (
            MODELS[settings.model_profile]
            if settings.model_profile
            else infer_model_profile(model_path)
        )
        model = with_overrides(base, dict(settings.model_overrides))
    except (ValueError, TypeError) as error:
        raise StartupError(f"specdecode-sim: profile override: {error}") from error
    return hardware, model


def _synthetic_rates(config: SpeculativeConfig) -> tuple[float, ...] | None:
    if config.rejection_sample_method != "synthetic":
        return None
    if config.synthetic_acceptance_rates is not None:
        return tuple(config.synthetic_acceptance_rates)
    if config.synthetic_acceptance_length is not None:
        return rates_for_mean_length(
            config.synthetic_acceptance_length, config.num_speculative_tokens
        )
    return None


def _spec_plan(config: SpeculativeConfig | None, model: ModelProfile) -> SpecPlan | None:
    if config is None:
        return None
    assert config.method is not None
    # ngram_gpu (0.18+) proposes what ngram proposes, on the GPU: simulated as ngram.
    method = "ngram" if config.method == "ngram_gpu" else config.method
    return SpecPlan(
        schedule=tuple(config.num_speculative_tokens_per_batch_size or ()),
        synthetic_rates=_synthetic_rates(config),
        method=method,
        num_speculative_tokens=config.num_speculative_tokens,
        prompt_lookup_min=config.prompt_lookup_min or 5,
        prompt_lookup_max=config.prompt_lookup_max or 5,
        suffix_max_depth=config.suffix_decoding_max_tree_depth,
        suffix_max_cached_requests=config.suffix_decoding_max_cached_requests,
        suffix_max_spec_factor=config.suffix_decoding_max_spec_factor,
        suffix_min_token_prob=config.suffix_decoding_min_token_prob,
        head=head_key(method, config.model, model.name),
        draft_tensor_parallel_size=config.draft_tensor_parallel_size,
    )


def _check_memory(
    hardware: HardwareProfile, model: ModelProfile, tp: int, utilization: float, max_len: int
) -> int:
    per_gpu_weights = model.weight_bytes / tp
    if per_gpu_weights > hardware.memory_bytes * utilization:
        raise StartupError(
            f"torch.OutOfMemoryError: CUDA out of memory. Model weights need "
            f"{per_gpu_weights / GIB:.2f} GiB per GPU; GPU 0 has a total capacity of "
            f"{hardware.memory_bytes / GIB:.2f} GiB ({hardware.name})."
        )
    capacity = kv_capacity_tokens(hardware, model, tp, utilization)
    if capacity <= 0:
        raise StartupError(
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine."
        )
    if capacity < max_len:
        needed = max_len * model.kv_bytes_per_token / GIB
        available = capacity * model.kv_bytes_per_token / GIB
        raise StartupError(
            f"ValueError: To serve at least one request with the models's max seq len "
            f"({max_len}), ({needed:.2f} GiB KV cache is needed, which is larger than the "
            f"available KV cache memory ({available:.2f} GiB). Based on the available memory, "
            f"the estimated maximum model length is {capacity}. Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
        )
    return capacity


def build_plan(args: argparse.Namespace, settings: SimSettings) -> EnginePlan:
    """Validate everything vLLM validates before it binds the port."""
    model_path: str = args.model_tag
    hardware, model = _profiles(model_path, settings)
    tp: int = args.tensor_parallel_size
    if tp < 1:
        raise StartupError(f"ValueError: tensor_parallel_size must be >= 1, got {tp}")
    utilization: float = args.gpu_memory_utilization
    if not 0 < utilization <= 1:
        raise StartupError(
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\n"
            "gpu_memory_utilization\n  Input should be "
            + ("greater than 0" if utilization <= 0 else "less than or equal to 1")
            + f" [type={'greater_than' if utilization <= 0 else 'less_than_equal'}, "
            f"input_value={utilization}, input_type=float]"
        )
    max_len: int = args.max_model_len or model.max_model_len
    if max_len > model.max_model_len:
        raise StartupError(
            f"ValueError: User-specified max_model_len ({max_len}) is greater than the derived "
            f"max_model_len (max_position_embeddings={model.max_model_len} or "
            "model_max_length=None in model's config.json). To allow overriding this maximum, "
            "set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
        )
    target = TargetModel(model_path, model.model_type, tp, max_len)
    try:
        spec = build_speculative_config(args.speculative_config, target, settings.release)
    except Exception as error:
        raise StartupError(getattr(error, "rendered", str(error))) from error
    capacity = _check_memory(hardware, model, tp, utilization, max_len)
    big_gpu = hardware.memory_bytes >= 70 * GIB and hardware.name != "A100"
    served = list(args.served_model_name or [model_path])
    engine = EngineConfig(
        hardware=hardware,
        model=model,
        tensor_parallel_size=tp,
        max_model_len=max_len,
        max_num_seqs=args.max_num_seqs or (1024 if big_gpu else 256),
        max_num_batched_tokens=args.max_num_batched_tokens or (8192 if big_gpu else 2048),
        kv_capacity_tokens=capacity,
        # The A/A knob: the config was validated like vLLM does, then decoding is plain.
        spec=None if settings.ignore_speculative else _spec_plan(spec, model),
        acceptance=settings.acceptance,
        latency_spike_probability=settings.faults.latency_spike_probability,
        latency_spike_seconds=settings.faults.latency_spike_seconds,
        seed=args.seed if args.seed is not None else 0,
    )
    spec_plan = engine.spec
    lookup = spec_plan is not None and spec_plan.method in ("ngram", "suffix")
    try:
        repetition = repetition_table(
            settings.repetition_overrides, settings.acceptance.constant if lookup else None
        )
    except ValueError as error:
        raise StartupError(f"specdecode-sim: profile repetition: {error}") from error
    return EnginePlan(
        engine=engine,
        repetition=repetition,
        model_path=model_path,
        served_names=served,
        host=settings.bind_host or args.host or "0.0.0.0",
        port=args.port,
        log_stats=not args.disable_log_stats,
        api_keys=list(args.api_key or []),
    )
