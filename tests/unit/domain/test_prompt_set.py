"""The prompt-set rule (`domain.prompt_set`): a set the load pods could not parse is a
problem naming the bad line before any pod starts; built-in prompts have nothing to parse."""

from __future__ import annotations

import pytest

from specdecode.domain.prompt_set import prompt_text_problem
from specdecode.domain.prompts import SamplingDefaults

pytestmark = pytest.mark.unit

SAMPLING = SamplingDefaults(temperature=0.0, top_p=1.0)


def test_a_parsable_set_and_the_built_in_prompts_have_no_problem() -> None:
    assert prompt_text_problem('{"prompt": "Hello"}\n{"prompt": "World"}\n', 256, SAMPLING) is None
    assert prompt_text_problem(None, 256, SAMPLING) is None


def test_a_bad_line_is_a_problem_naming_it() -> None:
    problem = prompt_text_problem('{"prompt": "Hello"}\nnot json\n', 256, SAMPLING)
    assert problem is not None and problem.startswith("prompt set unusable: ")
    assert "line 2" in problem


def test_an_empty_set_cannot_be_replayed() -> None:
    assert prompt_text_problem("", 256, SAMPLING) is not None
