"""Acceptance of drafted tokens: per-position conditional probabilities by method and class.

Position i (0-based) of a draft is accepted with probability a_i given positions < i were
accepted: a_i = first x decay^i. Drawing stops at the first rejection; the target then
emits one more token (the bonus / correction token), so a step emits accepted + 1 tokens.
For a constant a the mean tokens per step is (1 - a^(k+1)) / (1 - a).

The defaults below are modelling assumptions, calibrated so that vLLM's own counter alpha
(accepted / drafted tokens, at k=3) lands inside the ranges users report for it: EAGLE-3
on general chat about 0.70 (reported 0.6-0.8), code 0.75, RAG 0.65, translation without a
domain draft head 0.50 (reported 0.4-0.6). They are not measurements. n-gram and suffix
methods do not use them: their acceptance comes from real repetition (lookup.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

WORKLOAD_CLASSES: tuple[str, ...] = ("chat", "code", "rag", "translation", "math")


@dataclass(frozen=True)
class PositionCurve:
    """a_i = first x decay^i, clipped to [0, 1]."""

    first: float
    decay: float

    def conditional(self, positions: int) -> tuple[float, ...]:
        """Conditional acceptance for positions 0..positions-1."""
        return tuple(min(1.0, max(0.0, self.first * self.decay**i)) for i in range(positions))


_MODEL_BASED: dict[str, dict[str, PositionCurve]] = {
    "eagle3": {
        "chat": PositionCurve(0.85, 0.96),
        "code": PositionCurve(0.88, 0.97),
        "rag": PositionCurve(0.82, 0.95),
        "translation": PositionCurve(0.72, 0.93),
        "math": PositionCurve(0.87, 0.96),
    },
    "eagle": {
        "chat": PositionCurve(0.81, 0.93),
        "code": PositionCurve(0.84, 0.94),
        "rag": PositionCurve(0.79, 0.92),
        "translation": PositionCurve(0.69, 0.9),
        "math": PositionCurve(0.83, 0.93),
    },
    "mtp": {
        "chat": PositionCurve(0.91, 0.88),
        "code": PositionCurve(0.93, 0.9),
        "rag": PositionCurve(0.89, 0.87),
        "translation": PositionCurve(0.8, 0.85),
        "math": PositionCurve(0.92, 0.89),
    },
    "medusa": {
        "chat": PositionCurve(0.75, 0.85),
        "code": PositionCurve(0.78, 0.87),
        "rag": PositionCurve(0.72, 0.84),
        "translation": PositionCurve(0.65, 0.8),
        "math": PositionCurve(0.77, 0.85),
    },
    "mlp_speculator": {
        "chat": PositionCurve(0.76, 0.88),
        "code": PositionCurve(0.79, 0.89),
        "rag": PositionCurve(0.73, 0.86),
        "translation": PositionCurve(0.66, 0.83),
        "math": PositionCurve(0.77, 0.88),
    },
    "draft_model": {
        "chat": PositionCurve(0.82, 0.97),
        "code": PositionCurve(0.85, 0.97),
        "rag": PositionCurve(0.8, 0.96),
        "translation": PositionCurve(0.71, 0.95),
        "math": PositionCurve(0.83, 0.97),
    },
}

LOOKUP_METHODS = frozenset({"ngram", "suffix"})


@dataclass(frozen=True)
class AcceptanceModel:
    """Resolves the conditional acceptance vector for (method, class, k).

    `constant` (SPECDECODE_SIM_ACCEPTANCE) forces the same per-token probability at every
    position and class; `overrides` maps "method/class" or "class" to a PositionCurve.
    """

    constant: float | None = None
    overrides: tuple[tuple[str, PositionCurve], ...] = ()

    def curve(self, method: str, workload: str) -> PositionCurve:
        """The curve in force for this method and class."""
        if self.constant is not None:
            return PositionCurve(self.constant, 1.0)
        table = dict(self.overrides)
        for key in (f"{method}/{workload}", workload, method):
            if key in table:
                return table[key]
        by_class = _MODEL_BASED.get(method, _MODEL_BASED["eagle3"])
        return by_class.get(workload, by_class["chat"])

    def conditional(self, method: str, workload: str, positions: int) -> tuple[float, ...]:
        """Per-position conditional acceptance for one draft of `positions` tokens."""
        return self.curve(method, workload).conditional(positions)


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
