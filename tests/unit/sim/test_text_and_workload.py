"""Synthetic text, workload classes and lookup proposers."""

from __future__ import annotations

import random

import pytest

from specdecode_sim.lookup import NgramIndex, ngram_proposal, suffix_proposal
from specdecode_sim.suffixindex import ResponseCache, SuffixIndex
from specdecode_sim.textgen import REPETITION, TokenStream, detokenize, tokenize
from specdecode_sim.workload import infer_workload, resolve_workload

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("```python\ndef add(a, b):\n    return a + b\n```", "code"),
        ("Translate this sentence in French: good morning", "translation"),
        ("Context: the report says sales grew. Question: did sales grow?", "rag"),
        ("Solve the equation 3x + 4 = 19", "math"),
        ("How are you today?", "chat"),
    ],
)
def test_workload_inferred_from_prompt(prompt: str, expected: str) -> None:
    assert infer_workload(prompt, "chat") == expected


def test_explicit_workload_wins_and_unknown_is_refused() -> None:
    assert resolve_workload("CODE", "hello", "chat") == "code"
    assert resolve_workload("poetry", "hello", "chat") is None
    assert resolve_workload(None, "hello", "math") == "math"


def test_stream_is_deterministic_and_peek_matches_take() -> None:
    prompt = tokenize("alpha beta gamma delta " * 20)

    def stream() -> TokenStream:
        return TokenStream(prompt, random.Random("s"), REPETITION["code"])

    first, second = stream(), stream()
    peeked = first.peek(50)
    assert first.take(50) == peeked == second.take(50)
    assert detokenize(["a", "b"], first_in_output=True) == "a b"
    assert detokenize(["a"], first_in_output=False) == " a"


def test_ngram_proposal_continues_the_latest_match() -> None:
    index = NgramIndex(2, 3)
    index.extend(["x", "a", "b", "c", "d", "y", "a", "b"])
    assert ngram_proposal(index, k=2, max_model_len=100) == ["c", "d"]
    assert ngram_proposal(index, k=2, max_model_len=9) == ["c"]
    empty = NgramIndex(2, 3)
    empty.extend(["p", "q", "r", "s"])
    assert ngram_proposal(empty, k=3, max_model_len=100) == []


def test_suffix_proposal_uses_cached_responses_and_scales_with_match() -> None:
    cache = ResponseCache(max_depth=8, max_cached_requests=2)
    cache.add(["the", "quick", "brown", "fox", "jumps", "over"])
    own = SuffixIndex(8)
    own.append(own.new_document(), ["say", "the", "quick", "brown"])
    assert suffix_proposal(own, cache, k=5, max_spec_factor=1.0, max_model_len=100) == [
        "fox",
        "jumps",
        "over",
    ]
    assert suffix_proposal(own, cache, k=5, max_spec_factor=0.5, max_model_len=100) == ["fox"]
