"""Step-time model: the field shape (spec decode wins at low concurrency, loses when
compute-bound) and the break-even helper."""

from __future__ import annotations

import dataclasses

import pytest

from specdecode_sim.draft import break_even_concurrency, draft_seconds, seconds_per_output_token
from specdecode_sim.profiles import HARDWARE, MODELS, infer_model_profile
from specdecode_sim.steptime import (
    decode_shape,
    kv_capacity_tokens,
    target_step_seconds,
    weight_bytes_read,
)

pytestmark = pytest.mark.unit

H100, L40S = HARDWARE["H100"], HARDWARE["L40S"]
LLAMA_8B, LLAMA_70B, QWEN_MOE = (
    MODELS["llama-3.1-8b"],
    MODELS["llama-3.3-70b"],
    MODELS["qwen3-30b-a3b"],
)


def test_single_stream_step_is_weight_streaming_time() -> None:
    step = target_step_seconds(H100, LLAMA_8B, 1, decode_shape(1, 0, 1024))
    weights_only = LLAMA_8B.weight_bytes / (H100.hbm_bandwidth_bytes_per_s * H100.memory_efficiency)
    assert weights_only < step < weights_only + 0.005


def test_tensor_parallel_divides_the_memory_term() -> None:
    one = target_step_seconds(H100, LLAMA_70B, 1, decode_shape(1, 0, 1024))
    four = target_step_seconds(H100, LLAMA_70B, 4, decode_shape(1, 0, 1024))
    assert one / 4 < four < one / 2


@pytest.mark.parametrize("alpha", [0.6, 0.75])
def test_spec_decode_cuts_time_per_token_at_concurrency_one(alpha: float) -> None:
    plain = seconds_per_output_token(H100, LLAMA_8B, 1, 1, 1024)
    spec = seconds_per_output_token(H100, LLAMA_8B, 1, 1, 1024, method="eagle3", k=3, alpha=alpha)
    assert spec < plain * 0.7


def test_spec_decode_loses_when_compute_bound() -> None:
    crossover = break_even_concurrency(H100, LLAMA_70B, 4, k=3, alpha=0.6, context_len=512)
    assert crossover is not None and 16 <= crossover <= 512
    above = crossover + 16
    plain = seconds_per_output_token(H100, LLAMA_70B, 4, above, 512)
    spec = seconds_per_output_token(H100, LLAMA_70B, 4, above, 512, method="eagle3", k=3, alpha=0.6)
    assert spec > plain


def test_per_step_latency_always_rises_with_spec_decode() -> None:
    for concurrency in (1, 8, 64, 256):
        plain = target_step_seconds(H100, LLAMA_8B, 1, decode_shape(concurrency, 0, 1024))
        spec = target_step_seconds(H100, LLAMA_8B, 1, decode_shape(concurrency, 3, 1024))
        spec += draft_seconds("eagle3", H100, LLAMA_8B, 1, concurrency, 3, 1024)
        assert spec > plain


def test_better_acceptance_moves_the_crossover_up() -> None:
    low = break_even_concurrency(H100, LLAMA_70B, 4, k=3, alpha=0.5, context_len=512)
    high = break_even_concurrency(H100, LLAMA_70B, 4, k=3, alpha=0.8, context_len=512)
    assert low is not None and (high is None or high > low)


def test_slow_memory_gpu_is_more_memory_bound() -> None:
    # L40S has the highest FLOPs/bandwidth ratio: spec decode pays longer than on H100.
    h100 = break_even_concurrency(H100, LLAMA_70B, 4, k=3, alpha=0.6, context_len=512)
    l40s = break_even_concurrency(L40S, LLAMA_70B, 4, k=3, alpha=0.6, context_len=512)
    assert h100 is not None and (l40s is None or l40s > h100)


def test_moe_reads_more_experts_when_verifying_more_tokens() -> None:
    one = weight_bytes_read(QWEN_MOE, 1)
    four = weight_bytes_read(QWEN_MOE, 4)
    assert QWEN_MOE.active_params * 2 * 0.9 < one < four < QWEN_MOE.weight_bytes


def test_lookup_drafting_costs_microseconds() -> None:
    assert draft_seconds("ngram", H100, LLAMA_8B, 1, 1, 5, 1024) < 1e-4
    assert draft_seconds("eagle3", H100, LLAMA_8B, 1, 1, 3, 1024) > 3e-4


def test_kv_capacity_and_profile_inference() -> None:
    assert kv_capacity_tokens(H100, LLAMA_8B, 1, 0.9) > 131072
    assert kv_capacity_tokens(L40S, LLAMA_70B, 1, 0.9) <= 0
    assert infer_model_profile("Qwen/Qwen3-30B-A3B").name == "qwen3-30b-a3b"
    assert infer_model_profile("meta-llama/Llama-3.3-70B-Instruct").name == "llama-3.3-70b"
    assert infer_model_profile("mistralai/Mistral-7B").model_type == "mistral"
    assert dataclasses.replace(H100, memory_efficiency=0.5).memory_efficiency == 0.5
