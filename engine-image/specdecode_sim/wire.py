"""OpenAI/vLLM response bodies: SSE chunks, full responses, errors, /v1/models.

Shapes follow vLLM 0.11.2's protocol models: chat chunks `chat.completion.chunk` with a
role chunk first, completion chunks `text_completion`, `finish_reason` on the last text
chunk, an optional usage chunk with `choices: []`, then `data: [DONE]`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def sse(payload: dict[str, Any] | str) -> bytes:
    """One server-sent event."""
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


def error_body(
    message: str, error_type: str, status: int, param: str | None = None
) -> dict[str, Any]:
    """vLLM's ErrorResponse."""
    return {"error": {"message": message, "type": error_type, "param": param, "code": status}}


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """Token usage block."""
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": None,
    }


def chunk_usage(prompt_tokens: int, completion_tokens: int, chat: bool) -> dict[str, Any]:
    """Per-chunk usage (`continuous_usage_stats`) as vLLM 0.32 dumps it (exclude_unset):
    the three counts, and for chat the explicitly set `completion_tokens_details`."""
    body: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if chat:
        body["completion_tokens_details"] = None
    return body


@dataclass(frozen=True)
class ResponseHeader:
    """Fields every chunk of one response repeats."""

    response_id: str
    created: int
    model: str
    chat: bool


def chunk(
    header: ResponseHeader,
    text: str,
    finish_reason: str | None,
    stop_reason: str | None = None,
    role: bool = False,
) -> dict[str, Any]:
    """One streamed chunk carrying the text of one engine step.

    Field sets as vLLM 0.11.2 serialises them: chat chunks are dumped with
    exclude_unset (role chunk adds `prompt_token_ids`, text chunks `token_ids`, the last
    one `stop_reason`); completion chunks with every field, `usage: null` included.
    """
    if not header.chat:
        return {
            "id": header.response_id,
            "object": "text_completion",
            "created": header.created,
            "model": header.model,
            "choices": [
                {
                    "index": 0,
                    "text": text,
                    "logprobs": None,
                    "finish_reason": finish_reason,
                    "stop_reason": stop_reason,
                    "prompt_token_ids": None,
                    "token_ids": None,
                }
            ],
            "usage": None,
        }
    delta: dict[str, Any] = {"role": "assistant", "content": ""} if role else {"content": text}
    choice: dict[str, Any] = {
        "index": 0,
        "delta": delta,
        "logprobs": None,
        "finish_reason": finish_reason,
    }
    if finish_reason is not None:
        choice["stop_reason"] = stop_reason
    if not role:
        choice["token_ids"] = None
    body: dict[str, Any] = {
        "id": header.response_id,
        "object": "chat.completion.chunk",
        "created": header.created,
        "model": header.model,
        "choices": [choice],
    }
    if role:
        body["prompt_token_ids"] = None
    return body


def usage_chunk(
    header: ResponseHeader, prompt_tokens: int, completion_tokens: int
) -> dict[str, Any]:
    """The final `stream_options.include_usage` chunk (dumped with exclude_none)."""
    return {
        "id": header.response_id,
        "object": "chat.completion.chunk" if header.chat else "text_completion",
        "created": header.created,
        "model": header.model,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
        },
    }


def full_response(
    header: ResponseHeader,
    text: str,
    finish_reason: str | None,
    stop_reason: str | None,
    prompt_tokens: int,
    completion_tokens: int,
) -> dict[str, Any]:
    """Non-streaming chat.completion or text_completion (vLLM's model_dump: all fields)."""
    if header.chat:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": text,
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
                "tool_calls": [],
                "reasoning": None,
                "reasoning_content": None,
            },
            "logprobs": None,
            "finish_reason": finish_reason,
            "stop_reason": stop_reason,
            "token_ids": None,
        }
    else:
        choice = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": finish_reason,
            "stop_reason": stop_reason,
            "token_ids": None,
            "prompt_logprobs": None,
            "prompt_token_ids": None,
        }
    body: dict[str, Any] = {
        "id": header.response_id,
        "object": "chat.completion" if header.chat else "text_completion",
        "created": header.created,
        "model": header.model,
        "choices": [choice],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": usage(prompt_tokens, completion_tokens),
    }
    if header.chat:
        body["prompt_logprobs"] = None
        body["prompt_token_ids"] = None
    body["kv_transfer_params"] = None
    return body


def models_list(names: list[str], root: str, max_model_len: int, created: int) -> dict[str, Any]:
    """GET /v1/models."""
    data = [
        {
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": root,
            "parent": None,
            "max_model_len": max_model_len,
            "permission": [
                {
                    "id": f"modelperm-{index}",
                    "object": "model_permission",
                    "created": created,
                    "allow_create_engine": False,
                    "allow_sampling": True,
                    "allow_logprobs": True,
                    "allow_search_indices": False,
                    "allow_view": True,
                    "allow_fine_tuning": False,
                    "organization": "*",
                    "group": None,
                    "is_blocking": False,
                }
            ],
        }
        for index, name in enumerate(names)
    ]
    return {"object": "list", "data": data}
