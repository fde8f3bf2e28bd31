"""Acceptance draws: measured alpha matches the configured curve; the step law holds."""

from __future__ import annotations

import itertools
import random

import pytest

from specdecode_sim.acceptance import (
    AcceptanceModel,
    PositionCurve,
    draw_accepted,
    expected_tokens_for_curve,
    expected_tokens_per_step,
)

pytestmark = pytest.mark.unit

DRAFTS = 20000


def _simulate(conditional: tuple[float, ...], seed: int) -> tuple[float, list[float], float]:
    rng = random.Random(seed)
    k = len(conditional)
    accepted_total, per_position = 0, [0] * k
    for _ in range(DRAFTS):
        accepted = draw_accepted(rng, conditional)
        accepted_total += accepted
        for position in range(accepted):
            per_position[position] += 1
    alpha = accepted_total / (DRAFTS * k)
    return alpha, [count / DRAFTS for count in per_position], 1 + accepted_total / DRAFTS


@pytest.mark.parametrize("a", [0.3, 0.6, 0.8])
def test_constant_acceptance_follows_the_step_law(a: float) -> None:
    conditional = AcceptanceModel(constant=a).conditional("eagle3", "code", 4)
    assert conditional == (a, a, a, a)
    _, per_position, mean_length = _simulate(conditional, seed=7)
    assert mean_length == pytest.approx(expected_tokens_per_step(a, 4), rel=0.03)
    for position, rate in enumerate(per_position):
        assert rate == pytest.approx(a ** (position + 1), abs=0.02)


def test_default_eagle3_chat_curve_decays_and_matches_its_expectation() -> None:
    conditional = AcceptanceModel().conditional("eagle3", "chat", 5, "eagle3/llama-3.1-8b")
    # The study's 8B chat row at k=2: ~1.6-1.8 tokens per step (ITL/TPOT 1.63, fitted 1.75).
    assert 1.6 <= expected_tokens_for_curve(conditional[:2]) <= 1.8
    assert all(later < earlier for earlier, later in itertools.pairwise(conditional))
    _, per_position, mean_length = _simulate(conditional, seed=11)
    assert per_position == sorted(per_position, reverse=True)
    assert mean_length == pytest.approx(expected_tokens_for_curve(conditional), rel=0.03)


def test_classes_differ_and_overrides_win() -> None:
    model = AcceptanceModel()
    assert model.curve("eagle3", "chat").first > model.curve("eagle3", "translation").first
    custom = AcceptanceModel(overrides=(("eagle3/rag", PositionCurve(0.4, 1.0)),))
    assert custom.curve("eagle3", "rag").first == 0.4
    assert custom.curve("eagle3", "chat").first == model.curve("eagle3", "chat").first


def test_draws_are_deterministic_for_a_seed() -> None:
    conditional = (0.7, 0.7, 0.7)
    first = [draw_accepted(random.Random(3), conditional) for _ in range(5)]
    again = [draw_accepted(random.Random(3), conditional) for _ in range(5)]
    assert first == again
