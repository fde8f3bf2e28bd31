"""Parsing and validating OpenAI request bodies into one simulator request shape.

Never raises anything but RequestError, whatever the body: the server turns that into
vLLM's JSON error (400 by default, 404 for an unknown model as vLLM 0.11.2 does).
Defaults follow vLLM: completions max_tokens 16, chat max_tokens = what fits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class RequestError(Exception):
    """A request vLLM would reject; carries the OpenAI error type and HTTP status."""

    def __init__(
        self,
        message: str,
        status: int = 400,
        error_type: str = "BadRequestError",
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
        self.param = param


@dataclass(frozen=True)
class ParsedRequest:
    """The fields the simulator honours."""

    chat: bool
    model: str | None
    prompt_text: str
    prompt_token_ids: tuple[int, ...] | None
    max_tokens: int | None
    stream: bool
    include_usage: bool
    continuous_usage: bool  # vLLM: usage in every chunk (include_usage and continuous_usage_stats)
    seed: int | None
    temperature: float
    ignore_eos: bool
    stop: tuple[str, ...]
    workload: str | None
    top_p: float = 1.0


def decode_body(raw: bytes) -> dict[str, Any]:
    """JSON object or RequestError (malformed JSON, wrong top-level type)."""
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RequestError(f"JSON decode error: {error}") from error
    if not isinstance(body, dict):
        raise RequestError("Input should be a valid dictionary or object to extract fields from")
    return body


def _int_field(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise RequestError(f"{name}: Input should be a valid integer, got {value!r}")
    return int(value)


def _stop(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise RequestError("stop: Input should be a valid string or list of strings")


def _chat_prompt(messages: Any) -> str:
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages: Field required (a non-empty list of messages)")
    parts: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise RequestError("messages: each message needs a string 'role'")
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(part.get("text", "")) for part in content if isinstance(part, dict))
        elif content is not None:
            raise RequestError("messages: content must be a string or a list of parts")
    return "\n".join(parts)


def _completion_prompt(prompt: Any) -> tuple[str, tuple[int, ...] | None]:
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if isinstance(prompt, str):
        return prompt, None
    if (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt)
    ):
        return " ".join(f"t{token}" for token in prompt), tuple(prompt)
    raise RequestError("prompt: expected a string, a list with one string, or a list of token ids")


def parse_request(body: dict[str, Any], chat: bool, workload_header: str | None) -> ParsedRequest:
    """Validate one /v1/completions or /v1/chat/completions body."""
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise RequestError("model: Input should be a valid string")
    if chat:
        prompt_text, token_ids = _chat_prompt(body.get("messages")), None
        max_tokens = _int_field(body, "max_completion_tokens") or _int_field(body, "max_tokens")
    else:
        if "prompt" not in body:
            raise RequestError("prompt: Field required")
        prompt_text, token_ids = _completion_prompt(body.get("prompt"))
        max_tokens = _int_field(body, "max_tokens") if "max_tokens" in body else 16
    if max_tokens is not None and max_tokens < 1:
        raise RequestError(f"max_tokens must be at least 1, got {max_tokens}.")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise RequestError("stream_options: Input should be a valid dictionary")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise RequestError("stream: Input should be a valid boolean")
    if options is not None and not stream:
        raise RequestError("Stream options can only be defined when `stream=True`.")
    temperature = body.get("temperature", 1.0)
    if temperature is None:
        temperature = 1.0
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or temperature < 0:
        raise RequestError(f"temperature must be non-negative, got {temperature!r}.")
    top_p = body.get("top_p", 1.0)
    if top_p is None:
        top_p = 1.0
    if isinstance(top_p, bool) or not isinstance(top_p, int | float) or not 0 < top_p <= 1:
        raise RequestError(f"top_p must be in (0, 1], got {top_p!r}.")
    workload = body.get("specdecode_workload", workload_header)
    if workload is not None and not isinstance(workload, str):
        raise RequestError("specdecode_workload: Input should be a valid string")
    ignore_eos = body.get("ignore_eos", False)
    return ParsedRequest(
        chat=chat,
        model=model,
        prompt_text=prompt_text,
        prompt_token_ids=token_ids,
        max_tokens=max_tokens,
        stream=stream,
        include_usage=bool(options and options.get("include_usage")),
        continuous_usage=bool(
            options and options.get("include_usage") and options.get("continuous_usage_stats")
        ),
        seed=_int_field(body, "seed"),
        temperature=float(temperature),
        ignore_eos=bool(ignore_eos),
        stop=_stop(body.get("stop")),
        workload=workload,
        top_p=float(top_p),
    )
