"""One streamed chat request, timed exactly on the client.

vLLM's server-side ITL histogram has one sample per engine step and coarse buckets, so the
gates use the client's own clock: the gap between streamed chunks (per-chunk ITL) and that
gap spread over the tokens the chunk carried (per-token ITL). Tokens per chunk come from
vLLM's `continuous_usage_stats` (cumulative `completion_tokens` in every chunk); an engine
that does not send them is counted as one token per chunk, which the measurement records.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import httpx

from specdecode.domain.prompts import ShadowRequest


@dataclass
class RequestMeasurement:
    """What one request showed: chunk gaps, tokens per chunk, success."""

    started_at: float  # wall clock (time.time()) when the request was sent
    ok: bool = False
    error: str | None = None
    ttft: float | None = None
    chunk_gaps: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)  # tokens in the chunk ending each gap
    output_tokens: int = 0
    decode_seconds: float = 0.0

    def per_token_itl(self) -> list[float]:
        """Each chunk's gap divided over the tokens it carried, one sample per token."""
        samples: list[float] = []
        for gap, tokens in zip(self.chunk_gaps, self.chunk_tokens, strict=True):
            count = max(tokens, 1)
            samples.extend([gap / count] * count)
        return samples

    def time_per_output_token(self) -> float | None:
        """Decode time over generated tokens after the first (vLLM bench's TPOT)."""
        if self.output_tokens < 2:
            return None
        return self.decode_seconds / (self.output_tokens - 1)


async def stream_chat(
    http: httpx.AsyncClient,
    base_url: str,
    model: str,
    request: ShadowRequest,
    seed: int,
    timeout_seconds: float,
) -> RequestMeasurement:
    """Send one streaming chat completion and time every content chunk."""
    measurement = RequestMeasurement(started_at=time.time())
    headers = {"X-Workload-Class": request.workload} if request.workload else {}
    start = time.monotonic()
    last_chunk_at: float | None = None
    tokens_seen = 0
    try:
        async with http.stream(
            "POST",
            f"{base_url}/v1/chat/completions",
            json=request.chat_body(model, seed),
            headers=headers,
            timeout=timeout_seconds,
        ) as response:
            if response.status_code != httpx.codes.OK:
                body = (await response.aread()).decode(errors="replace")[:300]
                measurement.error = f"HTTP {response.status_code}: {body}"
                return measurement
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[len("data: ") :])
                now = time.monotonic()
                usage = chunk.get("usage") or {}
                cumulative = usage.get("completion_tokens")
                if not _has_content(chunk):
                    if cumulative is not None:
                        tokens_seen = max(tokens_seen, int(cumulative))
                    continue
                new_tokens = int(cumulative) - tokens_seen if cumulative is not None else 1
                tokens_seen = int(cumulative) if cumulative is not None else tokens_seen + 1
                if last_chunk_at is None:
                    measurement.ttft = now - start
                else:
                    measurement.chunk_gaps.append(now - last_chunk_at)
                    measurement.chunk_tokens.append(max(new_tokens, 1))
                last_chunk_at = now
        measurement.output_tokens = tokens_seen
        if measurement.ttft is not None and last_chunk_at is not None:
            measurement.decode_seconds = last_chunk_at - (start + measurement.ttft)
        measurement.ok = tokens_seen > 0
        if not measurement.ok:
            measurement.error = "stream ended without tokens"
    except (httpx.HTTPError, json.JSONDecodeError, ValueError) as error:
        measurement.error = f"{type(error).__name__}: {error}"[:300]
    return measurement


def _has_content(chunk: dict[str, object]) -> bool:
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices:
        return False
    first = choices[0]
    if not isinstance(first, dict):
        return False
    delta = first.get("delta") or {}
    text = delta.get("content") if isinstance(delta, dict) else None
    return bool(text) or bool(first.get("text"))
