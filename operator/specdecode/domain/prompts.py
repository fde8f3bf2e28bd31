"""Shadow prompts: parsed from a user's JSONL, or generated per workload class.

Accepts completion prompts, chat messages and ShareGPT lines, each optionally with the
sampling production used (acceptance depends on it: greedy shadows overstate alpha). A bad
line is an error naming its line. Pure: the operator and the load pods parse with it.
Line formats: docs/internals.md.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

WORKLOADS = ("chat", "code", "rag", "translation", "math")
# A line's `class`: what a Prometheus label value and a status line can carry plainly.
CLASS_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
SHAREGPT_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "system": "system",
}


class PromptSourceError(ValueError):
    """The prompt set cannot be used; the message says where and why."""


@dataclass(frozen=True)
class SamplingDefaults:
    """Sampling parameters for requests whose line does not set them: the spec's."""

    temperature: float
    top_p: float


@dataclass(frozen=True)
class ShadowRequest:
    """One request sent identically to baseline and candidate."""

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    max_tokens: int
    temperature: float
    top_p: float
    workload: str | None = None
    stop: tuple[str, ...] = ()
    traffic_class: str | None = None  # the line's `class` (only labels the acceptance split)

    def chat_body(self, model: str, seed: int) -> dict[str, object]:
        """The OpenAI chat-completions body, streaming with per-chunk usage."""
        body: dict[str, object] = {
            "model": model,
            "messages": [{"role": role, "content": text} for role, text in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": seed,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
        if self.stop:
            body["stop"] = list(self.stop)
        return body


def parse_jsonl(
    text: str, default_max_tokens: int, sampling: SamplingDefaults
) -> list[ShadowRequest]:
    """Every line of a JSONL prompt set, or a PromptSourceError naming the bad line."""
    requests: list[ShadowRequest] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("a line must be a JSON object")
            requests.append(_request_from(record, default_max_tokens, sampling))
        except (ValueError, TypeError, KeyError) as error:
            raise PromptSourceError(f"line {number}: {error}") from error
    if not requests:
        raise PromptSourceError("the prompt set is empty")
    return requests


def _request_from(
    record: dict[str, object], default_max_tokens: int, defaults: SamplingDefaults
) -> ShadowRequest:
    max_tokens = int(str(record.get("max_tokens", default_max_tokens)))
    if max_tokens <= 0:
        raise ValueError("max_tokens must be > 0")
    temperature = float(str(record.get("temperature", defaults.temperature)))
    if not 0.0 <= temperature <= 2.0:
        raise ValueError("temperature must be between 0 and 2")
    top_p = float(str(record.get("top_p", defaults.top_p)))
    if not 0.0 < top_p <= 1.0:
        raise ValueError("top_p must be in (0, 1]")
    stop = _stop(record.get("stop"))
    workload = record.get("workload")
    if workload is not None and workload not in WORKLOADS:
        raise ValueError(f"workload must be one of {', '.join(WORKLOADS)}")
    traffic_class = record.get("class")
    if traffic_class is not None and not (
        isinstance(traffic_class, str) and CLASS_LABEL.fullmatch(traffic_class)
    ):
        raise ValueError("class must be 1-40 letters, digits, '_', '.' or '-'")
    if "prompt" in record:
        messages: tuple[tuple[str, str], ...] = (("user", _text(record["prompt"])),)
    elif "messages" in record:
        messages = tuple(_turn(m, "role", "content", {}) for m in _list(record["messages"]))
    elif "conversations" in record:
        turns = [_turn(t, "from", "value", SHAREGPT_ROLES) for t in _list(record["conversations"])]
        last_user = max((i for i, (role, _) in enumerate(turns) if role == "user"), default=-1)
        messages = tuple(turns[: last_user + 1])
    else:
        raise ValueError("expected one of prompt, messages or conversations")
    if not messages or messages[-1][0] != "user":
        raise ValueError("the conversation must end with a user turn")
    return ShadowRequest(
        messages=messages,
        max_tokens=max_tokens,
        workload=_opt_str(workload),
        temperature=temperature,
        top_p=top_p,
        stop=stop,
        traffic_class=_opt_str(traffic_class),
    )


def _stop(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ValueError("stop must be a string or a list of non-empty strings")


def _turn(item: object, role_key: str, text_key: str, roles: dict[str, str]) -> tuple[str, str]:
    if not isinstance(item, dict):
        raise ValueError("a turn must be an object")
    role = str(item[role_key])
    return (roles.get(role, role), _text(item[text_key]))


def _list(value: object) -> list[object]:
    if not isinstance(value, list) or not value:
        raise ValueError("expected a non-empty list")
    return value


def _text(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("text must be a non-empty string")
    return value


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


_TOPICS = (
    "the history of tea",
    "how vaccines work",
    "a trip to Lisbon",
    "saving for retirement",
    "the rules of chess",
    "training for a marathon",
    "growing tomatoes",
    "black holes",
)
_FUNCTIONS = (
    ("merge_sorted", "a, b", "out = []\n    i = j = 0\n    while i < len(a) and j < len(b):"),
    ("binary_search", "items, target", "lo, hi = 0, len(items) - 1\n    while lo <= hi:"),
    ("word_count", "text", "counts = {}\n    for word in text.split():"),
    ("flatten", "nested", "out = []\n    for item in nested:"),
)


def _builtin_prompt(workload: str, index: int, rng: random.Random) -> str:
    topic = rng.choice(_TOPICS)
    if workload == "code":
        name, args, body = rng.choice(_FUNCTIONS)
        return f"Complete this Python function and explain it:\ndef {name}({args}):\n    {body}"
    if workload == "rag":
        return f"Context: {topic}. " * 40 + f"\nQuestion {index}: summarise the context."
    if workload == "translation":
        return f"Translate to French: I would like to learn about {topic}. ({index})"
    if workload == "math":
        return f"Solve step by step: {rng.randint(10, 99)} * {rng.randint(10, 99)} + {index}"
    return f"Tell me about {topic}. Keep it friendly. ({index})"


def builtin_prompts(
    workload: str,
    count: int,
    seed: int,
    max_tokens: int,
    sampling: SamplingDefaults,
) -> list[ShadowRequest]:
    """A deterministic synthetic prompt set of one workload class."""
    if workload not in WORKLOADS:
        raise PromptSourceError(f"unknown built-in workload {workload!r}")
    rng = random.Random(f"{workload}:{seed}")
    return [
        ShadowRequest(
            messages=(("user", _builtin_prompt(workload, i, rng)),),
            max_tokens=max_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            workload=workload,
        )
        for i in range(count)
    ]
