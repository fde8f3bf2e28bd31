"""HTTP API (Starlette): vLLM's OpenAI-compatible routes plus /health, /metrics, /version.

Any body gets a JSON answer: protocol.RequestError becomes vLLM's error JSON; nothing
a client sends can stop the engine loop. Faults (error rate, crash after N requests,
hung streams) are applied here, where vLLM's API server would see them.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from specdecode_sim import wire
from specdecode_sim.loop import EngineLoop
from specdecode_sim.protocol import ParsedRequest, RequestError, decode_body, parse_request
from specdecode_sim.releases import PINNED_VLLM_VERSION, parse_release
from specdecode_sim.request import Emission
from specdecode_sim.settings import Faults
from specdecode_sim.textgen import detokenize, tokenize
from specdecode_sim.workload import resolve_workload

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# A hung stream stops after 1..HANG_WITHIN_CHUNKS content chunks (seeded, uniform), or
# before its first token with `Faults.hang_before_first_token`.
HANG_WITHIN_CHUNKS = 8


@dataclass
class ServerRuntime:
    """What the routes need; built by cli.py."""

    engine: EngineLoop
    served_names: list[str]
    model_path: str
    max_model_len: int
    default_workload: str
    warmup_seconds: float
    faults: Faults
    api_keys: list[str]
    exit_process: Callable[[int], None]
    vllm_version: str = PINNED_VLLM_VERSION  # what GET /version answers (the imitated release)
    fault_rng: random.Random = field(default_factory=lambda: random.Random(0))
    accepted_requests: int = 0
    hung_requests: int = 0
    # when the engine first held `Faults.hang_from_load` requests (monotonic; None: not yet)
    hang_load_reached_at: float | None = None
    created: int = field(default_factory=lambda: int(time.time()))


def _error(error: RequestError) -> JSONResponse:
    return JSONResponse(
        wire.error_body(error.message, error.error_type, error.status, error.param),
        status_code=error.status,
    )


def create_app(runtime: ServerRuntime) -> Starlette:
    """The ASGI app for one simulated engine."""

    async def health(_: Request) -> Response:
        ready = runtime.engine.clock.now() >= runtime.warmup_seconds
        return Response(status_code=200 if ready else 503)

    async def version(_: Request) -> Response:
        return JSONResponse({"version": runtime.vllm_version})

    async def models(_: Request) -> Response:
        return JSONResponse(
            wire.models_list(
                runtime.served_names, runtime.model_path, runtime.max_model_len, runtime.created
            )
        )

    async def metrics(_: Request) -> Response:
        body = runtime.engine.metrics.exposition() if runtime.engine.metrics else b""
        body += runtime.engine.timeline.health.exposition()
        return Response(body, media_type=PROMETHEUS_CONTENT_TYPE)

    async def completions(request: Request) -> Response:
        return await _generate(runtime, request, chat=False)

    async def chat_completions(request: Request) -> Response:
        return await _generate(runtime, request, chat=True)

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/version", version, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    ]
    return Starlette(routes=routes)


def _authorized(runtime: ServerRuntime, request: Request) -> bool:
    if not runtime.api_keys:
        return True
    header = request.headers.get("authorization", "")
    return any(header == f"Bearer {key}" for key in runtime.api_keys)


def _validate(runtime: ServerRuntime, parsed: ParsedRequest) -> tuple[str, int, int]:
    """(workload, prompt tokens, max_tokens) or RequestError, with vLLM's messages."""
    with_param = parse_release(runtime.vllm_version).request_errors_with_param
    if parsed.model is not None and parsed.model not in runtime.served_names:
        if with_param:
            aliases = ", ".join(runtime.served_names)
            message = f"The model `{parsed.model}` does not exist. Valid aliases: {aliases}."
            raise RequestError(message, 404, "NotFoundError", "model")
        raise RequestError(f"The model `{parsed.model}` does not exist.", 404, "NotFoundError")
    workload = resolve_workload(parsed.workload, parsed.prompt_text, runtime.default_workload)
    if workload is None:
        raise RequestError(f"specdecode_workload {parsed.workload!r} is not a known class")
    prompt_tokens = (
        len(parsed.prompt_token_ids)
        if parsed.prompt_token_ids is not None
        else len(tokenize(parsed.prompt_text))
    )
    limit = runtime.max_model_len
    if prompt_tokens >= limit:
        raise RequestError(
            f"This model's maximum context length is {limit} tokens. However, your request "
            f"has {prompt_tokens} input tokens. Please reduce the length of the input messages."
        )
    max_tokens = parsed.max_tokens if parsed.max_tokens is not None else limit - prompt_tokens
    if with_param and max_tokens > limit:
        raise RequestError(
            f"max_tokens={max_tokens} cannot be greater than max_model_len={limit}. Please "
            f"request fewer output tokens. (parameter=max_tokens, value={max_tokens})",
            param="max_tokens",
        )
    if prompt_tokens + max_tokens > limit:
        raise RequestError(
            f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's "
            f"maximum context length is {limit} tokens and your request has {prompt_tokens} "
            f"input tokens ({max_tokens} > {limit} - {prompt_tokens})."
        )
    return workload, prompt_tokens, max_tokens


async def _generate(runtime: ServerRuntime, request: Request, chat: bool) -> Response:
    if not _authorized(runtime, request):
        return JSONResponse({"error": "Unauthorized"}, status_code=401)
    try:
        parsed = parse_request(
            decode_body(await request.body()), chat, request.headers.get("x-workload-class")
        )
        workload, prompt_tokens, max_tokens = _validate(runtime, parsed)
    except RequestError as error:
        return _error(error)
    faults = runtime.faults
    runtime.accepted_requests += 1
    if (
        faults.crash_after_requests is not None
        and runtime.accepted_requests > faults.crash_after_requests
    ):
        runtime.exit_process(1)
    if faults.error_rate and runtime.fault_rng.random() < faults.error_rate:
        if runtime.engine.metrics is not None:
            runtime.engine.metrics.record_engine_error()
        return _error(RequestError("simulated engine error", 500, "InternalServerError"))
    hang_after = hang_draw(runtime) if parsed.stream else None
    prefix = "chatcmpl-" if chat else "cmpl-"
    request_id = prefix + uuid.uuid4().hex
    header = wire.ResponseHeader(
        request_id, int(time.time()), parsed.model or runtime.served_names[0], chat
    )
    sim_request = runtime.engine.build_request(request_id, parsed, workload, max_tokens)
    queue = runtime.engine.submit(sim_request)
    if parsed.stream:
        return StreamingResponse(
            _stream(runtime, header, parsed, queue, prompt_tokens, request_id, hang_after),
            media_type="text/event-stream",
        )
    try:
        texts: list[str] = []
        while True:
            emission = await queue.get()
            texts.append(detokenize(emission.tokens, emission.first) if emission.tokens else "")
            if emission.finish_reason is not None:
                break
    except asyncio.CancelledError:
        runtime.engine.abort(request_id)
        raise
    body = wire.full_response(
        header,
        "".join(texts),
        emission.finish_reason,
        emission.request.stop_reason,
        prompt_tokens,
        len(emission.request.output),
    )
    return JSONResponse(body)


async def _stream(
    runtime: ServerRuntime,
    header: wire.ResponseHeader,
    parsed: ParsedRequest,
    queue: asyncio.Queue[Emission],
    prompt_tokens: int,
    request_id: str,
    hang_after: int | None = None,
) -> AsyncIterator[bytes]:
    finished = False
    generated = 0
    sent_chunks = 0

    release = parse_release(runtime.vllm_version)

    def with_usage(body: dict[str, Any]) -> dict[str, Any]:
        if parsed.continuous_usage:
            if release.streams_as_0_32:
                body["usage"] = wire.chunk_usage(prompt_tokens, generated, header.chat)
            else:
                body["usage"] = wire.usage(prompt_tokens, generated)
        return body

    try:
        if header.chat:
            role_chunk = wire.chunk(header, "", None, role=True)
            if release.streams_as_0_32:
                role_chunk["prompt_text"] = None
            yield wire.sse(with_usage(role_chunk))
        if hang_after == 0:  # a late start: the stream is open, no token ever comes
            await _hang(runtime, request_id, 0)
        while True:
            emission = await queue.get()
            generated += len(emission.tokens)
            text = detokenize(emission.tokens, emission.first) if emission.tokens else ""
            yield wire.sse(
                with_usage(
                    wire.chunk(header, text, emission.finish_reason, emission.request.stop_reason)
                )
            )
            if emission.finish_reason is not None:
                finished = True
                break
            sent_chunks += 1
            if hang_after is not None and sent_chunks >= hang_after:
                await _hang(runtime, request_id, sent_chunks)
        if parsed.include_usage:
            final = wire.usage_chunk(header, prompt_tokens, len(emission.request.output))
            if release.streams_as_0_32:
                final["system_fingerprint"] = f"vllm-{release.version}"
            yield wire.sse(final)
        yield wire.sse("[DONE]")
    finally:
        if not finished:
            runtime.engine.abort(request_id)


def hang_draw(runtime: ServerRuntime, now: float | None = None) -> int | None:
    """Whether a streamed request hangs (`Faults.hang_rate`, seeded), and after how many
    content chunks (0: before its first token); None: it streams to its end. No draw is
    made before the fault is armed (`hangs_armed`), so a seed's hangs start where it is."""
    faults = runtime.faults
    rate = faults.hang_rate
    if not rate or not hangs_armed(runtime, time.monotonic() if now is None else now):
        return None
    if runtime.fault_rng.random() >= rate:
        return None
    return 0 if faults.hang_before_first_token else runtime.fault_rng.randint(1, HANG_WITHIN_CHUNKS)


def hangs_armed(runtime: ServerRuntime, now: float) -> bool:
    """Whether requests may hang yet: once the engine has held `hang_from_load` requests
    (this one included) and `hang_delay_seconds` have passed since (a fault under load)."""
    faults = runtime.faults
    if faults.hang_from_load == 0 and faults.hang_delay_seconds == 0:
        return True
    if runtime.hang_load_reached_at is None:
        core = runtime.engine.core
        if len(core.running) + len(core.waiting) + 1 < faults.hang_from_load:
            return False
        runtime.hang_load_reached_at = now
    return now - runtime.hang_load_reached_at >= faults.hang_delay_seconds


async def _hang(runtime: ServerRuntime, request_id: str, chunks: int) -> None:
    """Stop streaming without closing: the engine drops the request (its batch slot is
    free), the connection stays open until the client gives up (its timeout). Each hang
    is logged with its wall-clock time (tests read when the first one happened)."""
    runtime.engine.abort(request_id)
    runtime.hung_requests += 1
    print(
        f"WARNING simulated hang {runtime.hung_requests} at {time.time():.3f}: {request_id} "
        f"stops streaming after {chunks} chunks",
        file=sys.stderr,
        flush=True,
    )
    await asyncio.Event().wait()  # until the client disconnects (cancelled)
