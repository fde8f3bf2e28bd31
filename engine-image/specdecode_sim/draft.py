"""Cost of proposing drafts, per method, and where speculative decoding stops paying.

- eagle / eagle3 / mtp: one small forward per drafted position (a decoder layer plus an
  LM head; EAGLE-3 uses a reduced draft vocabulary), memory-bound at low batch:
  t = max(head bytes / BW, 2 x head params x batch / FLOPs) + launch overhead.
- medusa: one pass of k heads; mlp_speculator: k small MLP stages.
- dflash / dspark (0.20+ / 0.25+): drafters that propose all k positions in one forward of
  a head-sized model (an assumption: no published cost figures were used).
- draft_model: k forward passes of the draft model's own step (steptime.py).
- ngram / suffix: CPU lookups, microseconds per sequence.
"""

from __future__ import annotations

from specdecode_sim.acceptance import expected_tokens_per_step
from specdecode_sim.profiles import MODELS, HardwareProfile, ModelProfile
from specdecode_sim.steptime import (
    StepShape,
    decode_shape,
    kv_capacity_tokens,
    target_step_seconds,
)

DRAFT_LAUNCH_OVERHEAD_S = 0.00015
EAGLE3_DRAFT_VOCAB_FRACTION = 0.25
NGRAM_CPU_S_PER_SEQUENCE = 0.00002
SUFFIX_CPU_S_PER_SEQUENCE = 0.00004


def _small_forward_seconds(
    hw: HardwareProfile, params: float, bytes_per_param: float, batch: int, tp: int
) -> float:
    memory = params * bytes_per_param / (hw.hbm_bandwidth_bytes_per_s * hw.memory_efficiency * tp)
    compute = 2.0 * params * batch / (hw.bf16_flops * hw.compute_efficiency * tp)
    return max(memory, compute) + DRAFT_LAUNCH_OVERHEAD_S


def draft_seconds(
    method: str,
    hw: HardwareProfile,
    target: ModelProfile,
    tp: int,
    batch: int,
    k: int,
    context_len: int,
    draft_model: ModelProfile | None = None,
    draft_tp: int | None = None,
    head: str | None = None,
) -> float:
    """Time spent drafting k tokens for `batch` sequences in one engine step.

    Model-based heads run with `draft_tp` (the config's draft_tensor_parallel_size; the
    study ran 1 even for the 70B target on two GPUs), default the target's TP. EAGLE-3
    checkpoints carry a reduced draft vocabulary, also when run under `method: eagle`."""
    if batch <= 0 or k <= 0:
        return 0.0
    tp = draft_tp or tp
    bpp = target.bytes_per_param
    if method in ("eagle", "eagle3", "mtp"):
        reduced = method == "eagle3" or (head or "").startswith("eagle-on-eagle3")
        vocab_fraction = EAGLE3_DRAFT_VOCAB_FRACTION if reduced else 1.0
        head_params = target.layer_params + target.lm_head_params * vocab_fraction
        return k * _small_forward_seconds(hw, head_params, bpp, batch, tp)
    if method in ("dflash", "dspark"):
        head_params = target.layer_params + target.lm_head_params
        return _small_forward_seconds(hw, head_params, bpp, batch * k, tp)
    if method == "medusa":
        heads = k * target.hidden_size * target.hidden_size + target.lm_head_params
        return _small_forward_seconds(hw, heads, bpp, batch, tp)
    if method == "mlp_speculator":
        stage = 2.0 * target.hidden_size * target.hidden_size + target.lm_head_params
        return k * _small_forward_seconds(hw, stage, bpp, batch, tp)
    if method == "draft_model":
        drafter = draft_model or MODELS["llama-3.2-1b"]
        one = target_step_seconds(hw, drafter, tp, decode_shape(batch, 0, context_len))
        return k * one
    if method == "ngram":
        return batch * NGRAM_CPU_S_PER_SEQUENCE
    if method == "suffix":
        return batch * SUFFIX_CPU_S_PER_SEQUENCE
    raise ValueError(f"no draft cost model for method {method!r}")


def seconds_per_output_token(
    hw: HardwareProfile,
    model: ModelProfile,
    tp: int,
    concurrency: int,
    context_len: int,
    method: str | None = None,
    k: int = 0,
    alpha: float = 0.0,
) -> float:
    """Steady-state decode time per output token per sequence (no spec decode if method None)."""
    if method is None or k <= 0:
        shape: StepShape = decode_shape(concurrency, 0, context_len)
        return target_step_seconds(hw, model, tp, shape)
    shape = decode_shape(concurrency, k, context_len)
    step = target_step_seconds(hw, model, tp, shape)
    step += draft_seconds(method, hw, model, tp, concurrency, k, context_len)
    return step / expected_tokens_per_step(alpha, k)


def break_even_concurrency(
    hw: HardwareProfile,
    model: ModelProfile,
    tp: int,
    k: int,
    alpha: float,
    method: str = "eagle3",
    context_len: int = 1024,
    max_concurrency: int = 1024,
    gpu_memory_utilization: float = 0.9,
) -> int | None:
    """Concurrency from which spec decode's time per output token is never better than
    plain decoding, up to what the KV cache can hold (None: it still pays there).

    1 means it never pays. The scan stops at min(max_concurrency, KV tokens / context).
    """
    kv_tokens = kv_capacity_tokens(hw, model, tp, gpu_memory_utilization)
    cap = max(1, min(max_concurrency, kv_tokens // max(context_len, 1)))
    losing_from: int | None = None
    for concurrency in range(1, cap + 1):
        plain = seconds_per_output_token(hw, model, tp, concurrency, context_len)
        spec = seconds_per_output_token(
            hw, model, tp, concurrency, context_len, method=method, k=k, alpha=alpha
        )
        if spec >= plain:
            losing_from = concurrency if losing_from is None else losing_from
        else:
            losing_from = None
    return losing_from
