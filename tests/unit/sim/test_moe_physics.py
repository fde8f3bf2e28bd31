"""MoE physics in the roofline: a step reads the union of its tokens' experts.

The expected union per MoE layer under uniform top-k routing, E (1 - (1 - k/E)^T), makes a
speculative verify (T = batch x (k+1) tokens) cost extra expert bytes that shrink as the
plain batch already reads most experts, so an MoE model's speculative speedup is low, even a
loss, at one stream, rises with load while the device is bandwidth-bound, and falls again
once the expert compute of the saturated union dominates (MoESD's non-monotonic curve).
These tests hold the uniform union (expert reuse 0), the bound; the fitted reuse of the
Qwen3 profile is tested against published rows in test_moe_calibration.py.
"""

from __future__ import annotations

import dataclasses

import pytest

from specdecode_sim.draft import seconds_per_output_token
from specdecode_sim.profiles import HARDWARE, MODELS, ModelProfile
from specdecode_sim.steptime import decode_shape, experts_touched, weight_bytes_read

pytestmark = pytest.mark.unit

FITTED, LLAMA_8B, GB10 = MODELS["qwen3-30b-a3b"], MODELS["llama-3.1-8b"], HARDWARE["GB10"]
QWEN = dataclasses.replace(FITTED, expert_reuse=0.0)
DENSE = QWEN.total_params - QWEN.expert_params


def _speedup(model: ModelProfile, streams: int) -> float:
    plain = seconds_per_output_token(GB10, model, 1, streams, 1024)
    spec = seconds_per_output_token(GB10, model, 1, streams, 1024, "eagle3", k=3, alpha=0.6)
    return plain / spec


def test_the_expected_union_is_the_uniform_routing_formula() -> None:
    # One token reads its top-8 of 128; 4 tokens 128 (1 - (15/16)^4) = 29.1; 1,024 all.
    assert experts_touched(QWEN, 1) == pytest.approx(8.0)
    assert experts_touched(QWEN, 4) == pytest.approx(29.12, abs=0.01)
    assert experts_touched(QWEN, 1024) == pytest.approx(128.0)
    one = weight_bytes_read(QWEN, decode_shape(1, 0, 1024)) / QWEN.bytes_per_param
    assert one == pytest.approx(DENSE + QWEN.expert_params * 8 / 128)


def test_a_verify_reads_extra_experts_that_shrink_as_the_batch_reads_them_all() -> None:
    # Extra weight bytes of a k=3 verify over a plain step: ~2.4x at 1 stream, ~1.14x at 32.
    extra = [
        weight_bytes_read(QWEN, decode_shape(c, 3, 1024))
        / weight_bytes_read(QWEN, decode_shape(c, 0, 1024))
        for c in (1, 8, 32, 128)
    ]
    print("verify / plain weight bytes at 1, 8, 32, 128 streams:", [f"{e:.2f}" for e in extra])
    assert extra[0] > 2.2
    assert extra == sorted(extra, reverse=True)
    assert extra[-1] < 1.01
    # A dense model reads all its weights whatever the batch.
    assert weight_bytes_read(LLAMA_8B, decode_shape(1, 3, 1024)) == LLAMA_8B.weight_bytes


def test_moe_speculation_loses_at_one_stream_and_pays_once_the_union_saturates() -> None:
    # GB10 (bandwidth-bound), EAGLE-3 k=3 at alpha 0.6: 0.86x, 1.07x, 1.87x at 1 / 8 / 32
    # streams, a peak near 64-128, and lower again at 512 (expert compute of the full union).
    moe = {c: _speedup(QWEN, c) for c in (1, 8, 32, 128, 512)}
    dense = {c: _speedup(LLAMA_8B, c) for c in (1, 8, 32, 128, 512)}
    print("MoE:", moe, "dense:", dense)
    assert moe[1] < 1.0 < moe[8] < moe[32] < moe[128]
    assert moe[512] < moe[128] - 0.2
    # The fitted reuse makes a verify cheaper, never dearer: more gain at every load, the
    # most at one stream (1.44x against 0.86x), none left once the union saturates.
    fitted = {c: _speedup(FITTED, c) for c in (1, 8, 32, 128, 512)}
    assert fitted[1] > moe[1] + 0.4
    assert all(fitted[c] >= moe[c] for c in moe)
    assert fitted[512] == pytest.approx(moe[512], abs=0.01)
    # The dense model's gain only shrinks with load.
    assert dense[1] > dense[8] > dense[32] > dense[128] > dense[512] > 1.0
