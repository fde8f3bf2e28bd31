"""Engine step time from hardware and model: a roofline with a fixed overhead.

    t_mem  = (weight bytes read / TP + KV bytes read / TP) / (HBM bandwidth x mem_eff)
    t_comp = (2 x active params x tokens + 4 x layers x hidden x sum(tokens x context))
             / (peak BF16 FLOPs x compute_eff x TP)
    step   = max(t_mem, t_comp) + step overhead + per-sequence overhead x seqs
             + TP all-reduce latency x 2 x layers (TP > 1)

tokens = decode sequences x (1 + drafted tokens) + prefill tokens in the step. For MoE
the weights read grow with the experts the step's tokens touch. Draft cost (draft.py)
is added on top. Pure functions: unit-tested without a clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdecode_sim.profiles import GIB, HardwareProfile, ModelProfile

ACTIVATION_RESERVE_BYTES_PER_GPU = 2 * GIB


@dataclass(frozen=True)
class StepShape:
    """What one engine step computes."""

    decode_sequences: int
    verified_tokens: int
    prefill_tokens: int
    kv_tokens_read: int
    attention_token_context: float

    @property
    def tokens(self) -> int:
        """Tokens the target model processes in this step."""
        return self.verified_tokens + self.prefill_tokens


def weight_bytes_read(model: ModelProfile, tokens: int) -> float:
    """Dense weights always; MoE experts only as far as this step's tokens route to them."""
    if model.num_experts <= 0 or model.expert_params <= 0:
        return model.weight_bytes
    untouched_per_token = 1.0 - model.experts_per_token / model.num_experts
    touched_fraction = 1.0 - untouched_per_token ** max(tokens, 1)
    dense = model.total_params - model.expert_params
    return (dense + model.expert_params * touched_fraction) * model.bytes_per_param


def memory_seconds(hw: HardwareProfile, model: ModelProfile, tp: int, shape: StepShape) -> float:
    """Time to stream weights and KV from HBM once."""
    kv_bytes = shape.kv_tokens_read * model.kv_bytes_per_token
    read = (weight_bytes_read(model, shape.tokens) + kv_bytes) / tp
    return read / (hw.hbm_bandwidth_bytes_per_s * hw.memory_efficiency)


def compute_seconds(hw: HardwareProfile, model: ModelProfile, tp: int, shape: StepShape) -> float:
    """Matmul plus attention FLOPs at the efficient compute rate."""
    flops = 2.0 * model.active_params * shape.tokens
    flops += 4.0 * model.num_layers * model.hidden_size * shape.attention_token_context
    return flops / (hw.bf16_flops * hw.compute_efficiency * tp)


def target_step_seconds(
    hw: HardwareProfile, model: ModelProfile, tp: int, shape: StepShape
) -> float:
    """Duration of one target-model forward pass (verify + prefill chunks)."""
    if shape.tokens <= 0:
        return 0.0
    roofline = max(memory_seconds(hw, model, tp, shape), compute_seconds(hw, model, tp, shape))
    overhead = hw.step_overhead_s + hw.per_sequence_overhead_s * shape.decode_sequences
    if tp > 1:
        overhead += hw.tp_allreduce_s_per_layer * 2 * model.num_layers
    return roofline + overhead


def kv_capacity_tokens(
    hw: HardwareProfile, model: ModelProfile, tp: int, gpu_memory_utilization: float
) -> int:
    """KV-cache tokens that fit once weights and activations are placed (<= 0: no room)."""
    budget = hw.memory_bytes * gpu_memory_utilization * tp
    free = budget - model.weight_bytes - ACTIVATION_RESERVE_BYTES_PER_GPU * tp
    return int(free // model.kv_bytes_per_token)


def decode_shape(concurrency: int, drafted: int, context_len: int) -> StepShape:
    """Steady-state decode step: every sequence verifies 1 + drafted tokens."""
    per_seq = 1 + drafted
    return StepShape(
        decode_sequences=concurrency,
        verified_tokens=concurrency * per_seq,
        prefill_tokens=0,
        kv_tokens_read=concurrency * context_len,
        attention_token_context=float(concurrency * per_seq * context_len),
    )
