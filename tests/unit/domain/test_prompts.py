"""Prompt sets: JSONL parsing with line-numbered errors, sampling parameters, built-ins."""

from __future__ import annotations

import json

import pytest

from specdecode.domain.prompts import (
    PromptSourceError,
    SamplingDefaults,
    builtin_prompts,
    parse_jsonl,
)

pytestmark = pytest.mark.unit

GREEDY = SamplingDefaults(temperature=0.0, top_p=1.0)  # the caller's choice, as a spec's


def test_jsonl_accepts_prompt_chat_and_sharegpt_lines() -> None:
    text = "\n".join(
        [
            json.dumps({"prompt": "p", "max_tokens": 5, "workload": "math"}),
            json.dumps({"messages": [{"role": "user", "content": "m"}]}),
            json.dumps(
                {
                    "conversations": [
                        {"from": "human", "value": "a"},
                        {"from": "gpt", "value": "b"},
                        {"from": "human", "value": "c"},
                        {"from": "gpt", "value": "d"},
                    ]
                }
            ),
        ]
    )
    requests = parse_jsonl(text, 64, GREEDY)
    assert [r.max_tokens for r in requests] == [5, 64, 64]
    assert requests[0].workload == "math"
    assert requests[2].messages == (("user", "a"), ("assistant", "b"), ("user", "c"))


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("not json", "line 2"),
        ('{"prompt": "x", "temperature": 3}', "temperature must be between 0 and 2"),
        ('{"prompt": "x", "top_p": 0}', "top_p must be in"),
        ('{"prompt": "x", "stop": [1]}', "stop must be a string"),
        ('{"max_tokens": 3}', "expected one of prompt"),
        ('{"prompt": "x", "max_tokens": 0}', "max_tokens must be > 0"),
        ('{"prompt": "x", "workload": "poetry"}', "workload must be one of"),
        ('{"messages": [{"role": "assistant", "content": "x"}]}', "end with a user turn"),
        ("[1, 2]", "JSON object"),
    ],
)
def test_jsonl_errors_name_the_line(line: str, fragment: str) -> None:
    with pytest.raises(PromptSourceError, match=fragment):
        parse_jsonl('{"prompt": "ok"}\n' + line, 8, GREEDY)


def test_empty_prompt_set_is_an_error() -> None:
    with pytest.raises(PromptSourceError, match="empty"):
        parse_jsonl("\n\n", 8, GREEDY)


def test_builtin_prompts_are_deterministic_per_seed() -> None:
    assert builtin_prompts("code", 5, 1, 32, GREEDY) == builtin_prompts("code", 5, 1, 32, GREEDY)
    assert builtin_prompts("code", 5, 1, 32, GREEDY) != builtin_prompts("code", 5, 2, 32, GREEDY)


def test_sampling_parameters_are_replayed_and_defaults_fill_the_rest() -> None:
    text = "\n".join(
        [
            json.dumps({"prompt": "a", "temperature": 0.7, "top_p": 0.9, "stop": ["\n\n"]}),
            json.dumps({"prompt": "b", "stop": "END"}),
        ]
    )
    first, second = parse_jsonl(text, 16, SamplingDefaults(temperature=0.3, top_p=0.95))
    assert (first.temperature, first.top_p, first.stop) == (0.7, 0.9, ("\n\n",))
    assert (second.temperature, second.top_p, second.stop) == (0.3, 0.95, ("END",))
    body = first.chat_body("m", seed=7)
    assert body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["stop"] == ["\n\n"]
    assert body["seed"] == 7 and body["stream"] is True
    assert "stop" not in parse_jsonl(json.dumps({"prompt": "c"}), 8, GREEDY)[0].chat_body("m", 1)


def test_builtin_prompts_take_the_sampling_defaults() -> None:
    (request,) = builtin_prompts("chat", 1, 0, 32, SamplingDefaults(temperature=0.7, top_p=0.8))
    assert request.temperature == 0.7 and request.chat_body("m", 0)["temperature"] == 0.7
    assert request.top_p == 0.8 and request.chat_body("m", 0)["top_p"] == 0.8
