"""Static engine parameters: the validated speculative plan and the engine configuration."""

from __future__ import annotations

from dataclasses import dataclass

from specdecode_sim.acceptance import AcceptanceModel
from specdecode_sim.profiles import HardwareProfile, ModelProfile


@dataclass(frozen=True)
class SpecPlan:
    """The validated speculative config, reduced to what the model needs."""

    method: str
    num_speculative_tokens: int
    prompt_lookup_min: int = 5
    prompt_lookup_max: int = 5
    suffix_max_depth: int = 24
    suffix_max_cached_requests: int = 10000
    suffix_max_spec_factor: float = 1.0
    suffix_min_token_prob: float = 0.1
    head: str | None = None  # acceptance.head_key: which trained head the table uses
    draft_tensor_parallel_size: int | None = None
    # num_speculative_tokens_per_batch_size (0.24+): sorted inclusive (start, end, k).
    schedule: tuple[tuple[int, int, int], ...] = ()
    # rejection_sample_method: synthetic (0.20+): P(position i accepted), non-increasing.
    synthetic_rates: tuple[float, ...] | None = None

    def tokens_for_batch(self, batch_size: int) -> int:
        """k for a running batch of this size: the schedule's range that holds it (a size
        in no range, a gap or beyond the last, drafts nothing: our assumption), else the
        configured num_speculative_tokens."""
        if not self.schedule:
            return self.num_speculative_tokens
        for start, end, k in self.schedule:
            if start <= batch_size <= end:
                return k
        return 0


@dataclass(frozen=True)
class EngineConfig:
    """Static engine parameters (from the CLI and the profiles)."""

    hardware: HardwareProfile
    model: ModelProfile
    tensor_parallel_size: int
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_capacity_tokens: int
    spec: SpecPlan | None
    acceptance: AcceptanceModel
    latency_spike_probability: float = 0.0
    latency_spike_seconds: float = 0.0
    seed: int = 0
