"""The httpx control of benchmarks/instrument.py: a streamed chat request timed by httpx.

Why here: the operator once sent shadow traffic itself with this client
(`specdecode.adapters.traffic.client.stream_chat`, removed when shadow load moved to its own
pods and `specdecode_load`'s raw-protocol `StreamConnection` replaced it). The instrument
keeps it as the control a plain asyncio HTTP client gives: the same chunk timing (a stamp
when httpx hands over a line), so its row shows what the raw client saves.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import httpx

from specdecode.domain.prompts import ShadowRequest


@dataclass
class Streamed:
    """One request as httpx saw it: when it was sent, and its content chunks' gaps."""

    started_at: float  # wall clock (time.time())
    chunk_gaps: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)  # tokens in the chunk ending a gap


async def stream_chat(
    http: httpx.AsyncClient, base_url: str, model: str, request: ShadowRequest, seed: int,
    timeout_seconds: float,
) -> Streamed:  # fmt: skip
    """Send one streaming chat completion and time every content chunk (errors: none)."""
    measured = Streamed(started_at=time.time())
    last_at: float | None = None
    seen = 0
    async with http.stream(
        "POST", f"{base_url}/v1/chat/completions", json=request.chat_body(model, seed),
        timeout=timeout_seconds,
    ) as response:  # fmt: skip
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: ") :])
            now = time.monotonic()
            cumulative = (chunk.get("usage") or {}).get("completion_tokens")
            choices = chunk.get("choices") or [{}]
            if not (choices[0].get("delta") or {}).get("content"):
                continue
            added = int(cumulative) - seen if cumulative is not None else 1
            seen += added
            if last_at is not None:
                measured.chunk_gaps.append(now - last_at)
                measured.chunk_tokens.append(max(added, 1))
            last_at = now
    return measured
