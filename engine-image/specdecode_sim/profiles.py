"""Hardware and model profiles: the numbers the step-time model runs on.

Hardware figures are vendor datasheet peaks (dense BF16 tensor FLOPs without sparsity,
memory bandwidth, memory size; `source` names the datasheet). Efficiencies and
overheads are fitted, not measured: L40S's to the published study's 8B baseline
(421 tok/s, 23.4 ms per-chunk ITL at concurrency 10), H200's to its 70B TP-2 rows;
the other devices take the H100/H200 values (same software stack, HBM) or, for GB10's
unified LPDDR5X, a lower memory efficiency. Model figures are the published
architecture sizes. Everything can be overridden from the profile file (settings.py).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

GIB = 1024**3


@dataclass(frozen=True)
class HardwareProfile:
    """One GPU type."""

    name: str
    hbm_bandwidth_bytes_per_s: float
    bf16_flops: float
    memory_bytes: float
    memory_efficiency: float = 0.85
    compute_efficiency: float = 0.50
    step_overhead_s: float = 0.0015
    per_sequence_overhead_s: float = 0.00002
    tp_allreduce_s_per_layer: float = 0.00001
    # Share of the smaller of memory / compute time hidden under the larger one; real
    # decode kernels overlap the two only partly, so verifying more tokens is not free.
    overlap: float = 0.0
    # Fixed cost of a speculative step: rejection sampler, draft metadata, extra launches.
    spec_step_overhead_s: float = 0.0012
    # Tokens per expert at which an MoE expert GEMM reaches the compute efficiency above;
    # fewer tokens per expert waste the tensor cores proportionally.
    moe_tile_tokens: int = 16
    source: str = ""


@dataclass(frozen=True)
class ModelProfile:
    """One target (or draft) model architecture."""

    name: str
    model_type: str
    total_params: float
    active_params: float
    num_layers: int
    hidden_size: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_model_len: int
    bytes_per_param: float = 2.0
    num_experts: int = 0
    experts_per_token: int = 0
    expert_params: float = 0.0
    # Share of a sequence's routings after its first in a step (its drafted verify
    # positions, a prefill chunk's later tokens) that land on experts the sequence already
    # reads: 0 is uniform, independent routing, the upper bound on the union (steptime.py).
    # One value per model family, fitted to published rows (benchmarks/calibration_moe.py).
    expert_reuse: float = 0.0

    def __post_init__(self) -> None:
        """A reuse share outside [0, 1) has no meaning: refuse it where the profile is built."""
        if not 0.0 <= self.expert_reuse < 1.0:
            raise ValueError(f"expert_reuse must be in [0, 1), got {self.expert_reuse}")

    @property
    def weight_bytes(self) -> float:
        """All weights, as loaded on the GPUs."""
        return self.total_params * self.bytes_per_param

    @property
    def kv_bytes_per_token(self) -> float:
        """K and V, every layer, BF16."""
        return 2.0 * self.num_layers * self.num_kv_heads * self.head_dim * 2.0

    @property
    def layer_params(self) -> float:
        """Active parameters of one decoder layer (the size of an MTP layer)."""
        return self.active_params / self.num_layers

    @property
    def lm_head_params(self) -> float:
        """Output projection; an EAGLE head reuses or shrinks it."""
        return float(self.vocab_size * self.hidden_size)


HARDWARE: dict[str, HardwareProfile] = {
    "L40S": HardwareProfile(
        "L40S",
        0.864e12,
        362e12,
        48 * GIB,
        memory_efficiency=0.90,
        step_overhead_s=0.0012,
        source="NVIDIA L40S datasheet: 864 GB/s GDDR6, 362 TFLOPS BF16 dense, 48 GB",
    ),
    "A100": HardwareProfile(
        "A100",
        2.039e12,
        312e12,
        80 * GIB,
        overlap=0.5,
        source="NVIDIA A100 80GB SXM datasheet: 2,039 GB/s, 312 TFLOPS BF16 dense",
    ),
    "H100": HardwareProfile(
        "H100",
        3.35e12,
        989e12,
        80 * GIB,
        overlap=0.7,
        source="NVIDIA H100 SXM datasheet: 3.35 TB/s HBM3, 989 TFLOPS BF16 dense, 80 GB",
    ),
    "H200": HardwareProfile(
        "H200",
        4.8e12,
        989e12,
        141 * GIB,
        overlap=0.7,
        source="NVIDIA H200 SXM datasheet: 4.8 TB/s HBM3e, 989 TFLOPS BF16 dense, 141 GB",
    ),
    "H20": HardwareProfile(
        "H20",
        4.0e12,
        148e12,
        96 * GIB,
        overlap=0.7,
        source=(
            "NVIDIA H20 (Hopper, China market): no public NVIDIA datasheet page; the spec "
            "sheet as reported (willitrunai.com/es/gpus/h20-96gb): 4.0 TB/s HBM3, 148 TFLOPS "
            "FP16/BF16 dense, 96 GB; efficiencies and overheads as H100 (same stack), checked "
            "against AngelSlim's dense Qwen3 rows on it (benchmarks/calibration_moe_rows.py)"
        ),
    ),
    "B200": HardwareProfile(
        "B200",
        8.0e12,
        2250e12,
        180 * GIB,
        overlap=0.7,
        source="NVIDIA HGX B200 datasheet (per GPU): 8 TB/s HBM3e, 2.25 PFLOPS BF16 dense, 180 GB",
    ),
    "GB10": HardwareProfile(
        "GB10",
        0.273e12,
        125e12,
        128 * GIB,
        memory_efficiency=0.75,
        step_overhead_s=0.002,
        moe_tile_tokens=32,
        source=(
            "NVIDIA DGX Spark (GB10) datasheet: 273 GB/s LPDDR5X unified, 128 GB, 1 PFLOP "
            "FP4 sparse; BF16 dense taken as 1/8 of that (125 TFLOPS), an estimate"
        ),
    ),
}

MODELS: dict[str, ModelProfile] = {
    "llama-3.1-8b": ModelProfile(
        "llama-3.1-8b", "llama", 8.03e9, 8.03e9, 32, 4096, 8, 128, 128256, 131072
    ),
    "llama-3.3-70b": ModelProfile(
        "llama-3.3-70b", "llama", 70.6e9, 70.6e9, 80, 8192, 8, 128, 128256, 131072
    ),
    "qwen3-30b-a3b": ModelProfile(
        "qwen3-30b-a3b",
        "qwen3_moe",
        30.5e9,
        3.3e9,
        48,
        2048,
        4,
        128,
        151936,
        40960,
        num_experts=128,
        experts_per_token=8,
        expert_params=28.9e9,
        # Fitted to AngelSlim's vLLM EAGLE-3 k=2 rows on an H20 (benchmarks/calibration_moe.py,
        # fit_expert_reuse; a unit test re-runs the fit): the uniform union (0) puts them at
        # 0.97-1.01x against 1.32-1.46x published.
        expert_reuse=0.76,
    ),
    "llama-3.2-1b": ModelProfile(
        "llama-3.2-1b", "llama", 1.24e9, 1.24e9, 16, 2048, 8, 64, 128256, 131072
    ),
}

_NAME_HINTS: tuple[tuple[str, str], ...] = (
    (r"30b-a3b", "qwen3-30b-a3b"),
    (r"70b", "llama-3.3-70b"),
    (r"(^|[^0-9.])(1b|1\.\db)", "llama-3.2-1b"),
    (r"(7b|8b)", "llama-3.1-8b"),
)


def infer_model_profile(model_name: str) -> ModelProfile:
    """Pick the built-in profile a model name most likely matches (default: 8B Llama)."""
    lowered = model_name.lower()
    for pattern, key in _NAME_HINTS:
        if re.search(pattern, lowered):
            profile = MODELS[key]
            break
    else:
        profile = MODELS["llama-3.1-8b"]
    return dataclasses.replace(profile, model_type=infer_model_type(lowered, profile))


def infer_model_type(lowered_name: str, profile: ModelProfile) -> str:
    """HF `model_type` guess from the name: vLLM's EAGLE-3 check looks at it."""
    for family in ("qwen3_moe", "qwen", "llama", "mistral", "mixtral", "gemma", "phi", "gpt_oss"):
        if family.replace("_", "-") in lowered_name or family in lowered_name:
            return family if family != "qwen" else "qwen3"
    if "deepseek" in lowered_name:
        return "deepseek_v3"
    return profile.model_type


def with_overrides(profile: Any, overrides: dict[str, Any]) -> Any:
    """A copy of a profile dataclass with some fields replaced; unknown fields are errors."""
    known = {f.name for f in dataclasses.fields(profile)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown profile fields {unknown}; known: {sorted(known)}")
    return dataclasses.replace(profile, **overrides)
