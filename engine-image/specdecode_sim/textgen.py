"""Deterministic synthetic text whose repetition is real, within and across requests.

Tokens are words (the simulator's tokenizer is `str.split`). The target model's output is
a sequence of segments; at each token the stream either continues the current segment
or starts a new one:

- a *shared phrase*: one of a fixed bank of phrases per workload class, drawn with Zipf
  popularity (rank^-1.1). Every request of a class draws from the same bank, so
  responses share phrasing across requests the way chat answers share stock sentences
  ("I hope this helps", "Here is an example") and patches share diff boilerplate. This is
  what suffix decoding's global cache of earlier responses finds; a request's own
  history (n-gram lookup) finds it only when a phrase recurs inside one request.
- a *copy* of a prompt / own-output span (code and RAG copy their context a lot, chat
  and translation little): what n-gram lookup and suffix decoding's local tree find.
- a *fresh* vocabulary word.

Rates per class are in REPETITION (calibrated with benchmarks/calibration.py so that
n-gram and suffix decoding earn the published speedups through the real lookups).
Because the stream is generated ahead on demand (`peek`), a lookup proposer's draft is
checked against what the target *will* emit: acceptance follows from repetition.
A sampling temperature above 0 shortens copies (the model wanders off a memorised
span sooner): continuation probabilities are multiplied by temperature_factor.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "ch", "st")
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ou", "ea")
_CODAS = ("", "n", "r", "s")
VOCABULARY: tuple[str, ...] = tuple(o + n + c for o in _ONSETS for n in _NUCLEI for c in _CODAS)
PHRASE_BANK_SIZE = 4000
ZIPF_EXPONENT = 1.1


def tokenize(text: str) -> list[str]:
    """The simulator's tokenizer: whitespace-separated words (at least one token)."""
    return text.split() or [""]


@dataclass(frozen=True)
class RepetitionProfile:
    """How much a workload class copies (context, shared phrases), and how long it answers."""

    copy_start: float
    copy_continue: float
    median_output_tokens: int
    phrase_start: float = 0.0
    phrase_continue: float = 0.95
    median_phrase_tokens: int = 10


REPETITION: dict[str, RepetitionProfile] = {
    "chat": RepetitionProfile(0.08, 0.90, 220, 0.06, 0.96, 12),
    "code": RepetitionProfile(0.02, 0.93, 300, 0.22, 0.98, 16),
    "rag": RepetitionProfile(0.10, 0.88, 150, 0.02, 0.95, 8),
    "translation": RepetitionProfile(0.01, 0.50, 120, 0.005, 0.90, 6),
    "math": RepetitionProfile(0.06, 0.75, 250, 0.04, 0.95, 8),
}


@cache
def phrase_bank(
    workload: str, median_tokens: int
) -> tuple[tuple[tuple[str, ...], ...], list[float]]:
    """The class's shared phrases (fixed for every server) and their cumulative Zipf weights."""
    rng = random.Random(f"phrase-bank:{workload}:{median_tokens}")
    phrases = tuple(
        tuple(
            rng.choice(VOCABULARY)
            for _ in range(max(3, min(48, round(rng.lognormvariate(0.0, 0.5) * median_tokens))))
        )
        for _ in range(PHRASE_BANK_SIZE)
    )
    weights = [rank**-ZIPF_EXPONENT for rank in range(1, PHRASE_BANK_SIZE + 1)]
    return phrases, list(itertools.accumulate(weights))


class TokenStream:
    """The target model's output for one request, generated lazily and deterministically."""

    def __init__(
        self,
        prompt: list[str],
        rng: random.Random,
        repetition: RepetitionProfile,
        workload: str = "chat",
        continue_factor: float = 1.0,
    ) -> None:
        self._prompt = prompt
        self._rng = rng
        self._repetition = repetition
        self._copy_continue = repetition.copy_continue * continue_factor
        self._phrase_continue = repetition.phrase_continue * continue_factor
        self._phrases, self._cumulative = phrase_bank(workload, repetition.median_phrase_tokens)
        self._output: list[str] = []
        self._emitted = 0
        self._copy_from: int | None = None
        self._phrase: tuple[str, ...] | None = None
        self._phrase_at = 0

    def _context(self, index: int) -> str:
        if index < len(self._prompt):
            return self._prompt[index]
        return self._output[index - len(self._prompt)]

    def _continue_segment(self, produced: int) -> str | None:
        phrase = self._phrase
        if phrase is not None:
            if self._phrase_at < len(phrase) and self._rng.random() < self._phrase_continue:
                self._phrase_at += 1
                return phrase[self._phrase_at - 1]
            self._phrase = None
        pointer = self._copy_from
        if pointer is not None:
            if pointer < produced and self._rng.random() < self._copy_continue:
                self._copy_from = pointer + 1
                return self._context(pointer)
            self._copy_from = None
        return None

    def _generate_one(self) -> str:
        produced = len(self._prompt) + len(self._output)
        continued = self._continue_segment(produced)
        if continued is not None:
            return continued
        draw = self._rng.random()
        repetition = self._repetition
        if draw < repetition.phrase_start:
            rank = bisect.bisect_left(self._cumulative, self._rng.random() * self._cumulative[-1])
            self._phrase, self._phrase_at = self._phrases[rank], 1
            return self._phrase[0]
        if draw < repetition.phrase_start + repetition.copy_start and len(self._prompt) > 1:
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


_FIELDS = (
    "copy_start",
    "copy_continue",
    "median_output_tokens",
    "phrase_start",
    "phrase_continue",
    "median_phrase_tokens",
)


def repetition_table(
    overrides: Mapping[str, Mapping[str, float]], lookup_acceptance: float | None
) -> dict[str, RepetitionProfile]:
    """Per-class repetition after profile-file overrides.

    With a forced acceptance `a` (SPECDECODE_SIM_ACCEPTANCE) and an n-gram/suffix method,
    copying continues with probability `a`, starts often and shared phrases are off, so a
    lookup draft made inside a copied span is accepted position by position with
    probability close to `a` when the prompt's n-grams are unique (repeated n-grams make
    the lookup pick other spans).
    """
    table: dict[str, RepetitionProfile] = {}
    for workload, base in REPETITION.items():
        fields = dict(overrides.get(workload, {}))
        unknown = sorted(set(fields) - set(_FIELDS))
        if unknown:
            raise ValueError(f"unknown repetition fields for {workload!r}: {unknown}")
        values = {name: fields.get(name, getattr(base, name)) for name in _FIELDS}
        profile = RepetitionProfile(
            copy_start=float(values["copy_start"]),
            copy_continue=float(values["copy_continue"]),
            median_output_tokens=int(values["median_output_tokens"]),
            phrase_start=float(values["phrase_start"]),
            phrase_continue=float(values["phrase_continue"]),
            median_phrase_tokens=int(values["median_phrase_tokens"]),
        )
        if lookup_acceptance is not None:
            profile = replace(
                profile,
                copy_start=max(profile.copy_start, 0.5),
                copy_continue=lookup_acceptance,
                phrase_start=0.0,
            )
        table[workload] = profile
    return table
