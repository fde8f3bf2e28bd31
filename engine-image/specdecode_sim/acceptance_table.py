"""The acceptance table: per trained head and workload class, with where each number is from.

Study rows (published side-by-side study, vLLM 0.12, `vllm bench serve`, concurrency 10,
EAGLE/EAGLE-3 with k = 2, greedy). Each row gives two readings of the mean tokens one
step emits: mean per-chunk ITL / mean TPOT (e.g. 8B chat EAGLE-3 29.2 / 17.90 = 1.63),
and published speedup x (simulated spec ITL / simulated baseline ITL), i.e. what this
step model needs to reproduce the row's throughput gain (1.40 x 29.3 / 23.9 = 1.72; 1.75 is
used to keep it clear of suffix decoding's 1.39, as in the study).
The second (`fitted`) is used; the first is kept beside it: they differ by 0-18 %,
the published throughput ratios being larger than their TPOT ratios. For k = 2 tokens per
step = 1 + a0 + a0 a1 with a1 = a0 x decay; `first` = a0 is solved from it
(`from_tokens_per_step`). The per-position decay is an assumption (EAGLE-3's
training-time test keeps later positions close to the first: 0.95; EAGLE-1: 0.90).

Classes the study did not measure (rag, translation, math) and methods it did not run
(mtp, medusa, mlp_speculator, draft_model) are assumptions placed relative to the measured
rows: chat-trained heads do worse on translation than on chat, RAG sits between chat and
code, math near chat. They are labelled "assumed" below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class PositionCurve:
    """a_i = first x decay^i, clipped to [0, 1]."""

    first: float
    decay: float

    def conditional(self, positions: int) -> tuple[float, ...]:
        """Conditional acceptance for positions 0..positions-1."""
        return tuple(min(1.0, max(0.0, self.first * self.decay**i)) for i in range(positions))


def from_tokens_per_step(tokens_per_step: float, decay: float) -> PositionCurve:
    """The k = 2 curve whose mean tokens per step is `tokens_per_step` (1 + a + decay a^2)."""
    extra = max(tokens_per_step - 1.0, 0.0)
    first = (-1.0 + math.sqrt(1.0 + 4.0 * decay * extra)) / (2.0 * decay)
    return PositionCurve(round(first, 4), decay)


EAGLE3_DECAY = 0.95
EAGLE_DECAY = 0.90


def _study(itl_ms: float, tpot_ms: float, fitted: float, decay: float) -> PositionCurve:
    """A study row: published ITL and TPOT (their ratio is the direct reading, kept for
    the record) and the tokens per step fitted to the published speedup (used)."""
    del itl_ms, tpot_ms
    return from_tokens_per_step(fitted, decay)


def _assumed(first: float, decay: float) -> PositionCurve:
    return PositionCurve(first, decay)


HEAD_CURVES: dict[str, dict[str, PositionCurve]] = {
    # yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (chat-trained)
    "eagle3/llama-3.1-8b": {
        "chat": _study(29.2, 17.90, 1.75, EAGLE3_DECAY),
        "code": _study(29.5, 25.56, 1.24, EAGLE3_DECAY),
        "rag": _assumed(0.36, EAGLE3_DECAY),
        "translation": _assumed(0.22, EAGLE3_DECAY),
        "math": _assumed(0.42, EAGLE3_DECAY),
    },
    # yuhuili/EAGLE-LLaMA3.1-Instruct-8B
    "eagle/llama-3.1-8b": {
        "chat": _study(31.1, 17.49, 1.93, EAGLE_DECAY),
        "code": _study(30.0, 24.40, 1.38, EAGLE_DECAY),
        "rag": _assumed(0.40, EAGLE_DECAY),
        "translation": _assumed(0.25, EAGLE_DECAY),
        "math": _assumed(0.48, EAGLE_DECAY),
    },
    # yuhuili/EAGLE3-LLaMA3.3-Instruct-70B (stays good on code)
    "eagle3/llama-3.3-70b": {
        "chat": _study(25.5, 15.95, 1.84, EAGLE3_DECAY),
        "code": _study(32.1, 15.73, 2.02, EAGLE3_DECAY),
        "rag": _assumed(0.50, EAGLE3_DECAY),
        "translation": _assumed(0.30, EAGLE3_DECAY),
        "math": _assumed(0.50, EAGLE3_DECAY),
    },
    # An EAGLE-3 checkpoint under `method: eagle` (the study's 70B "EAGLE" rows)
    "eagle-on-eagle3-head": {
        "chat": _study(24.8, 22.81, 1.19, EAGLE_DECAY),
        "code": _study(28.4, 25.38, 1.18, EAGLE_DECAY),
        "rag": _assumed(0.09, EAGLE_DECAY),
        "translation": _assumed(0.05, EAGLE_DECAY),
        "math": _assumed(0.09, EAGLE_DECAY),
    },
}
# Heads for targets the study did not run: the 8B rows (chat-trained public heads).
HEAD_CURVES["eagle3"] = HEAD_CURVES["eagle3/llama-3.1-8b"]
HEAD_CURVES["eagle"] = HEAD_CURVES["eagle/llama-3.1-8b"]
# Assumed: MTP layers are trained with the target on its own data (higher, steeper);
# Medusa / MLP speculator heads predict without the previous draft token (steep decay);
# a separate small draft model decays slowly. Code is no better than chat for any of them.
HEAD_CURVES["mtp"] = {
    "chat": _assumed(0.80, 0.88),
    "code": _assumed(0.78, 0.88),
    "rag": _assumed(0.78, 0.87),
    "translation": _assumed(0.65, 0.85),
    "math": _assumed(0.82, 0.89),
}
HEAD_CURVES["medusa"] = {
    "chat": _assumed(0.55, 0.80),
    "code": _assumed(0.45, 0.80),
    "rag": _assumed(0.50, 0.80),
    "translation": _assumed(0.35, 0.78),
    "math": _assumed(0.55, 0.80),
}
HEAD_CURVES["mlp_speculator"] = {
    "chat": _assumed(0.55, 0.85),
    "code": _assumed(0.45, 0.85),
    "rag": _assumed(0.50, 0.84),
    "translation": _assumed(0.35, 0.82),
    "math": _assumed(0.55, 0.85),
}
HEAD_CURVES["draft_model"] = {
    "chat": _assumed(0.70, 0.97),
    "code": _assumed(0.68, 0.97),
    "rag": _assumed(0.68, 0.96),
    "translation": _assumed(0.55, 0.95),
    "math": _assumed(0.72, 0.97),
}
