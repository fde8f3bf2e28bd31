"""Acceptance of drafted tokens: per-position conditional probabilities by head and class.

Position i (0-based) of a draft is accepted with probability a_i given positions < i were
accepted: a_i = first x decay^i. Drawing stops at the first rejection; the target then
emits one more token (the bonus / correction token), so a step emits accepted + 1 tokens.
For a constant a the mean tokens per step is (1 - a^(k+1)) / (1 - a).

Where the numbers come from (acceptance_table.py holds the table and its derivation):
the published side-by-side study (vLLM 0.12, concurrency 10, k = 2, greedy; see
benchmarks/calibration.py) gives mean per-chunk ITL and TPOT per method; ITL / TPOT is
the mean tokens per step, and `first` is solved from it for an assumed per-position decay.
Heads are told apart because the study shows they differ: the 8B EAGLE-3 head is trained
on chat (ShareGPT/UltraChat) and barely helps on code, the 70B head stays good on code,
and an EAGLE-3 checkpoint run under `method: eagle` accepts almost nothing.

Sampling temperature lowers acceptance (greedy accepts more): see `temperature_factor`.
n-gram and suffix methods do not use these curves: their acceptance comes from real
repetition in the synthetic text (lookup.py, suffixindex.py, textgen.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from specdecode_sim.acceptance_table import HEAD_CURVES, PositionCurve

__all__ = [
    "LOOKUP_METHODS",
    "WORKLOAD_CLASSES",
    "AcceptanceModel",
    "PositionCurve",
    "draw_accepted",
    "expected_draft_acceptance_rate",
    "expected_tokens_for_curve",
    "expected_tokens_per_step",
    "head_key",
    "rates_for_mean_length",
    "synthetic_conditional",
    "temperature_factor",
]

WORKLOAD_CLASSES: tuple[str, ...] = ("chat", "code", "rag", "translation", "math")
LOOKUP_METHODS = frozenset({"ngram", "suffix"})

# Relative loss of per-position acceptance at effective temperature 1 (linear in between).
# Source: the nebius EAGLE3-Llama-3.3-70B model card reports mean acceptance length 4.78 at
# T=0 and 4.50 at T=1 (K=7) with exact rejection sampling, about -4 % per position; it also
# notes that vLLM drafts greedily whatever the temperature (vllm#20459), which loses more.
# -10 % at T=1 is our assumption for vLLM; effective temperature = temperature x top_p
# (nucleus truncation moves sampling toward greedy). Not a measurement.
TEMPERATURE_LOSS_AT_1 = 0.10


def temperature_factor(temperature: float, top_p: float = 1.0) -> float:
    """Multiplier on every conditional acceptance: 1 for greedy, 0.9 at T=1 (capped at 1.5)."""
    effective = min(max(temperature, 0.0) * min(max(top_p, 0.0), 1.0), 1.5)
    return 1.0 - TEMPERATURE_LOSS_AT_1 * effective


def head_key(method: str, draft_model: str | None, target_profile: str) -> str:
    """Which trained head a speculative config runs: "method/target" or a mismatch key.

    An EAGLE-3 checkpoint loaded with `method: eagle` feeds the head one layer's features
    instead of the three it was trained on: the study's 70B "EAGLE" row (1.02x) is that.
    """
    lowered = (draft_model or "").lower()
    if method == "eagle" and "eagle3" in lowered.replace("-", "").replace("_", ""):
        return "eagle-on-eagle3-head"
    return f"{method}/{target_profile}"


@dataclass(frozen=True)
class AcceptanceModel:
    """Resolves the conditional acceptance vector for (method, head, class, k, temperature).

    `constant` (SPECDECODE_SIM_ACCEPTANCE) forces the same per-token probability at every
    position, class and temperature (tests assert alpha from it); `overrides` maps
    "method/class", "class" or "method" to a PositionCurve (profile file).
    """

    constant: float | None = None
    overrides: tuple[tuple[str, PositionCurve], ...] = ()

    def curve(self, method: str, workload: str, head: str | None = None) -> PositionCurve:
        """The curve in force for this method, head and class (before temperature)."""
        if self.constant is not None:
            return PositionCurve(self.constant, 1.0)
        table = dict(self.overrides)
        for key in (f"{method}/{workload}", workload, method):
            if key in table:
                return table[key]
        for row in (head, method):
            if row is not None and row in HEAD_CURVES:
                by_class = HEAD_CURVES[row]
                return by_class.get(workload, by_class["chat"])
        by_class = HEAD_CURVES["eagle3"]
        return by_class.get(workload, by_class["chat"])

    def conditional(
        self,
        method: str,
        workload: str,
        positions: int,
        head: str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
    ) -> tuple[float, ...]:
        """Per-position conditional acceptance for one draft of `positions` tokens."""
        curve = self.curve(method, workload, head).conditional(positions)
        if self.constant is not None:
            return curve
        factor = temperature_factor(temperature, top_p)
        return tuple(probability * factor for probability in curve)


def draw_accepted(rng: random.Random, conditional: tuple[float, ...]) -> int:
    """Accepted prefix length of one draft: sequential draws, stop at the first rejection."""
    accepted = 0
    for probability in conditional:
        if rng.random() >= probability:
            break
        accepted += 1
    return accepted


def expected_tokens_per_step(alpha: float, k: int) -> float:
    """(1 - a^(k+1)) / (1 - a): accepted drafts plus the bonus token, constant a."""
    if alpha >= 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def expected_tokens_for_curve(conditional: tuple[float, ...]) -> float:
    """1 + sum_i P(first i+1 positions accepted), for any per-position curve."""
    total, survive = 1.0, 1.0
    for probability in conditional:
        survive *= probability
        total += survive
    return total


def expected_draft_acceptance_rate(conditional: tuple[float, ...]) -> float:
    """What vLLM's counters give as alpha = accepted / drafted tokens for a full-length
    draft: (1/k) x sum_i P(positions 0..i accepted). For constant a: (a + ... + a^k) / k."""
    if not conditional:
        return 0.0
    return (expected_tokens_for_curve(conditional) - 1.0) / len(conditional)


def rates_for_mean_length(length: float, k: int) -> tuple[float, ...]:
    """`synthetic_acceptance_length` as per-position rates: the constant conditional a
    whose mean tokens per step (1 - a^(k+1)) / (1 - a) equals `length` (bisection),
    position i accepted with probability a^(i+1). vLLM's own spreading over positions
    is not modelled; the mean, which the operator measures, is exact."""
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        if expected_tokens_per_step(middle, k) < length:
            low = middle
        else:
            high = middle
    alpha = (low + high) / 2
    return tuple(alpha ** (position + 1) for position in range(k))


def synthetic_conditional(rates: tuple[float, ...], positions: int) -> tuple[float, ...]:
    """Conditional acceptance per position from unconditional rates r_i (non-increasing):
    a_i = r_i / r_(i-1), so position i is accepted in a fraction r_i of drafts."""
    conditional, previous = [], 1.0
    for rate in rates[:positions]:
        conditional.append(rate / previous if previous > 0 else 0.0)
        previous = rate
    return tuple(conditional)
