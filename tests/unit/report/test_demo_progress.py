"""The demo's progress lines: one per change, nothing when nothing changed.

The demo once printed the whole gate table every second (its in-stage clock changes every
second); these lines are what it prints between a stage's start and the verdict.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from localcluster.progress import change_lines, stage_started

pytestmark = pytest.mark.unit


def rollout(phase: str, stage: str | None, **gate: Any) -> dict[str, Any]:
    gates = [{"name": "alpha", "verdict": "Pending", "value": 0.7, "samples": 100, **gate}]
    stages = [{"name": "chat-c4", "phase": "Progressing", "gates": gates}] if stage else []
    return {"status": {"phase": phase, "currentStage": stage, "stages": stages}}


def test_nothing_changed_prints_nothing() -> None:
    document = rollout("Analyzing", "chat-c4", lowerBound=0.6, upperBound=0.8)
    assert change_lines(document, copy.deepcopy(document)) == []
    assert not stage_started(document, copy.deepcopy(document))


def test_a_new_look_is_one_line_with_its_numbers() -> None:
    before = rollout("Analyzing", "chat-c4", lowerBound=0.6, upperBound=0.8, threshold=0.5)
    after = rollout(
        "Analyzing",
        "chat-c4",
        verdict="Successful",
        lowerBound=0.65,
        upperBound=0.75,
        threshold=0.5,
        samples=400,
    )
    assert change_lines(before, after) == [
        "chat-c4/alpha: Successful 0.700 [0.650, 0.750] vs 0.500 (400 samples)"
    ]


def test_phase_stage_and_message_changes_are_said() -> None:
    after = rollout("Analyzing", "chat-c4")
    after["status"]["message"] = "stage chat-c4 started"
    lines = change_lines(rollout("Pending", None), after)
    assert lines[:2] == ["phase Pending -> Analyzing", "stage chat-c4 started"]
    assert lines[-1] == "  stage chat-c4 started"
    assert stage_started(rollout("Pending", None), after)
    assert change_lines(None, rollout("Pending", None)) == ["phase - -> Pending"]


def test_a_close_call_is_named() -> None:
    before = rollout("Analyzing", "chat-c4")
    after = rollout("Analyzing", "chat-c4", verdict="Inconclusive", closeCall=True)
    assert change_lines(before, after)[0].startswith("chat-c4/alpha: Inconclusive (close call)")
