"""Engine step time from hardware and model: a partly overlapped roofline plus overheads.

    t_mem  = (weight bytes read / TP + KV bytes read / TP) / (bandwidth x mem_eff)
    t_comp = (2 x active params x tokens + 4 x layers x hidden x sum(tokens x context))
             / (peak BF16 FLOPs x compute_eff x TP)
    step   = max(t_mem, t_comp) + (1 - overlap) x min(t_mem, t_comp)
             + step overhead + per-sequence overhead x seqs
             + TP all-reduce latency x 2 x layers (TP > 1)
             + spec step overhead (when the step verifies drafts)

tokens = decode sequences x (1 + drafted tokens) + prefill tokens in the step. Verifying
k extra tokens per sequence therefore costs compute time even while the step is
memory-bound (the published per-chunk ITL rises 6-33 % at concurrency 10 on an L40S).

MoE (expert activation, `experts_touched`): a step reads, in every MoE layer, the union
of the experts its tokens route to. Every token of the step routes (the k+1 verify tokens
of each sequence of the batch, and prefill tokens), top-k of E experts; under uniform,
independent routing the expected number of distinct experts is E (1 - (1 - k/E)^T) for T
tokens (the expected-activated-experts formula of MoESD, Huang et al. 2025, arXiv
2505.19645; MoE-Spec, McDanel et al. 2026, arXiv 2602.16052 and XShare, arXiv 2602.07265
measure the union of a verify batch growing towards all experts). So the verify pass costs
most extra bytes at concurrency 1 (T = k+1 against T = 1), and less as the batch already
reads most experts; where the plain batch reads them all, verifying costs no extra bytes,
only expert compute, which runs at poor efficiency while each expert sees few tokens
(`moe_tile_tokens`). Expert reuse (`ModelProfile.expert_reuse`, r): the share of a
sequence's tokens after its first in the step (its drafted verify positions, a prefill
chunk's later tokens) that land on experts the sequence already reads; consecutive tokens
of one text route alike. Sequences route independently of each other (no published
plain-decoding row supports cross-batch reuse: SGLang's batch scaling in SpecForge #339 is
below even the uniform union's). The union is then taken over S + (T - S)(1 - r)
independent routings for T tokens of S sequences; r = 0 is the uniform union, the upper
bound on the bytes a step reads, and a plain decode step (T = S) is the same for every r.
Qwen3-30B-A3B's r is fitted to published vLLM chain rows (benchmarks/calibration_moe.py).
Draft cost (draft.py) is added on top.
Pure functions: unit-tested without a clock.
"""

from __future__ import annotations

import math
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
    prefill_sequences: int = 0
    speculative: bool = False

    @property
    def tokens(self) -> int:
        """Tokens the target model processes in this step."""
        return self.verified_tokens + self.prefill_tokens


def experts_touched(model: ModelProfile, tokens: float, sequences: float = 1.0) -> float:
    """Expected distinct experts one MoE layer reads for `tokens` routings of `sequences`
    sequences, E (1 - (1 - k/E)^T'): T' = S + (T - S)(1 - reuse) independent routings (each
    sequence's first token routes afresh; reuse 0: the uniform union over all T)."""
    experts, top_k = model.num_experts, model.experts_per_token
    routed = max(tokens, 1.0)
    first = min(max(sequences, 1.0), routed)
    independent = first + (routed - first) * (1.0 - model.expert_reuse)
    return experts * (1.0 - math.pow(1.0 - min(1.0, top_k / experts), independent))


def step_routing(shape_or_tokens: StepShape | int) -> tuple[int, int]:
    """(tokens, sequences) a step routes: a bare token count is one sequence's tokens."""
    if isinstance(shape_or_tokens, int):
        return shape_or_tokens, 1
    shape = shape_or_tokens
    return shape.tokens, shape.decode_sequences + shape.prefill_sequences


def weight_bytes_read(model: ModelProfile, shape_or_tokens: StepShape | int) -> float:
    """Dense weights always; MoE experts only as far as this step's tokens route to them."""
    if model.num_experts <= 0 or model.expert_params <= 0:
        return model.weight_bytes
    share = experts_touched(model, *step_routing(shape_or_tokens)) / model.num_experts
    dense = model.total_params - model.expert_params
    return (dense + model.expert_params * share) * model.bytes_per_param


def memory_seconds(hw: HardwareProfile, model: ModelProfile, tp: int, shape: StepShape) -> float:
    """Time to stream weights and KV from memory once."""
    kv_bytes = shape.kv_tokens_read * model.kv_bytes_per_token
    read = (weight_bytes_read(model, shape) + kv_bytes) / tp
    return read / (hw.hbm_bandwidth_bytes_per_s * hw.memory_efficiency)


def compute_seconds(hw: HardwareProfile, model: ModelProfile, tp: int, shape: StepShape) -> float:
    """Matmul plus attention FLOPs at the efficient compute rate (MoE: tile waste)."""
    rate = hw.bf16_flops * hw.compute_efficiency * tp
    flops = 4.0 * model.num_layers * model.hidden_size * shape.attention_token_context
    if model.num_experts > 0 and model.expert_params > 0:
        per_token_expert = model.expert_params * model.experts_per_token / model.num_experts
        dense = model.active_params - per_token_expert
        touched = experts_touched(model, *step_routing(shape))
        per_expert = shape.tokens * model.experts_per_token / max(touched, 1.0)
        utilisation = min(1.0, per_expert / hw.moe_tile_tokens)
        expert_seconds = 2.0 * per_token_expert * shape.tokens / (rate * utilisation)
        return (2.0 * dense * shape.tokens + flops) / rate + expert_seconds
    flops += 2.0 * model.active_params * shape.tokens
    return flops / rate


def target_step_seconds(
    hw: HardwareProfile, model: ModelProfile, tp: int, shape: StepShape
) -> float:
    """Duration of one target-model forward pass (verify + prefill chunks)."""
    if shape.tokens <= 0:
        return 0.0
    memory = memory_seconds(hw, model, tp, shape)
    compute = compute_seconds(hw, model, tp, shape)
    roofline = max(memory, compute) + (1.0 - hw.overlap) * min(memory, compute)
    overhead = hw.step_overhead_s + hw.per_sequence_overhead_s * shape.decode_sequences
    if tp > 1:
        overhead += hw.tp_allreduce_s_per_layer * 2 * model.num_layers
    if shape.speculative:
        overhead += hw.spec_step_overhead_s
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
        speculative=drafted > 0,
    )
