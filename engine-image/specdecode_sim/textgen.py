"""Deterministic synthetic text whose repetition is real.

Tokens are words (the simulator's tokenizer is `str.split`). The target model's output
is a stream that, at each token, either continues copying a span of the prompt/output
(probability `copy_continue`), starts copying a new span of the prompt (`copy_start`),
or emits a word from a fixed vocabulary. Code and RAG prompts copy a lot, chat little.
Because the stream is generated ahead of time on demand (`peek`), an n-gram or suffix
proposer can check a draft against what the target *will* emit: acceptance of lookup
methods then follows from actual repetition, as in vLLM.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "ch", "st")
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ou", "ea")
_CODAS = ("", "n", "r", "s")
VOCABULARY: tuple[str, ...] = tuple(o + n + c for o in _ONSETS for n in _NUCLEI for c in _CODAS)


def tokenize(text: str) -> list[str]:
    """The simulator's tokenizer: whitespace-separated words (at least one token)."""
    return text.split() or [""]


@dataclass(frozen=True)
class RepetitionProfile:
    """How much a workload class copies from its context, and how long answers run."""

    copy_start: float
    copy_continue: float
    median_output_tokens: int


REPETITION: dict[str, RepetitionProfile] = {
    "chat": RepetitionProfile(0.05, 0.60, 200),
    "code": RepetitionProfile(0.25, 0.90, 300),
    "rag": RepetitionProfile(0.20, 0.88, 150),
    "translation": RepetitionProfile(0.02, 0.50, 120),
    "math": RepetitionProfile(0.10, 0.75, 250),
}


class TokenStream:
    """The target model's output for one request, generated lazily and deterministically."""

    def __init__(
        self, prompt: list[str], rng: random.Random, repetition: RepetitionProfile
    ) -> None:
        self._prompt = prompt
        self._rng = rng
        self._repetition = repetition
        self._output: list[str] = []
        self._emitted = 0
        self._copy_from: int | None = None

    def _context(self, index: int) -> str:
        if index < len(self._prompt):
            return self._prompt[index]
        return self._output[index - len(self._prompt)]

    def _generate_one(self) -> str:
        produced = len(self._prompt) + len(self._output)
        pointer = self._copy_from
        if pointer is not None and pointer < produced:
            if self._rng.random() < self._repetition.copy_continue:
                self._copy_from = pointer + 1
                return self._context(pointer)
            self._copy_from = None
        if self._rng.random() < self._repetition.copy_start and len(self._prompt) > 1:
            start = self._rng.randrange(len(self._prompt))
            self._copy_from = start + 1
            return self._prompt[start]
        return VOCABULARY[self._rng.randrange(len(VOCABULARY))]

    def peek(self, count: int) -> list[str]:
        """The next `count` tokens the target will emit, without consuming them."""
        while len(self._output) - self._emitted < count:
            self._output.append(self._generate_one())
        return self._output[self._emitted : self._emitted + count]

    def take(self, count: int) -> list[str]:
        """Consume and return the next `count` tokens."""
        tokens = self.peek(count)
        self._emitted += count
        return tokens


def natural_output_length(rng: random.Random, repetition: RepetitionProfile) -> int:
    """Where the model would emit EOS: log-normal around the class median."""
    return max(1, round(rng.lognormvariate(0.0, 0.6) * repetition.median_output_tokens))


def detokenize(tokens: list[str], first_in_output: bool) -> str:
    """Text of consecutive output tokens (space-separated, no leading space at the start)."""
    text = " ".join(tokens)
    return text if first_in_output else " " + text


def repetition_table(
    overrides: Mapping[str, Mapping[str, float]], lookup_acceptance: float | None
) -> dict[str, RepetitionProfile]:
    """Per-class repetition after profile-file overrides.

    With a forced acceptance `a` (SPECDECODE_SIM_ACCEPTANCE) and an n-gram/suffix method,
    copying continues with probability `a` and starts often, so a lookup draft made inside
    a copied span is accepted position by position with probability close to `a` when
    the prompt's n-grams are unique (repeated n-grams make the lookup pick other spans).
    """
    table: dict[str, RepetitionProfile] = {}
    for workload, base in REPETITION.items():
        fields = dict(overrides.get(workload, {}))
        profile = RepetitionProfile(
            copy_start=float(fields.pop("copy_start", base.copy_start)),
            copy_continue=float(fields.pop("copy_continue", base.copy_continue)),
            median_output_tokens=int(fields.pop("median_output_tokens", base.median_output_tokens)),
        )
        if fields:
            raise ValueError(f"unknown repetition fields for {workload!r}: {sorted(fields)}")
        if lookup_acceptance is not None:
            profile = RepetitionProfile(
                max(profile.copy_start, 0.5), lookup_acceptance, profile.median_output_tokens
            )
        table[workload] = profile
    return table
