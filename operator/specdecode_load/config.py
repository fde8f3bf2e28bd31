"""Command-line options of `specdecode-load`, validated once into a `LoadConfig`.

Why a frozen value: every bad flag stops the program at start (exit 2, naming the flag),
not later in a worker. What the rollout's spec sets has no default here (a copy could
drift); the rest defaults from `specdecode.domain.load_flags`. More: docs/internals.md.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path

from specdecode.domain import load_flags
from specdecode.domain.prompts import (
    WORKLOADS,
    PromptSourceError,
    SamplingDefaults,
    ShadowRequest,
    builtin_prompts,
    parse_jsonl,
)
from specdecode_load.pool import Endpoint, EndpointError, parse_endpoint
from specdecode_load.report_server import add_report_flags, parse_report_server

TRAFFIC = "from the CRD's traffic."  # the owner of each flag that has no default here


@dataclass(frozen=True)
class LoadConfig:
    """One load pod's configuration."""

    side: str
    shard: int
    shards: int
    processes: int
    endpoints: tuple[Endpoint, ...]
    model: str
    prompts: tuple[ShadowRequest, ...]
    seed: int
    concurrency: int | None
    request_rate: float | None
    max_in_flight: int
    max_requests: int | None
    max_output_tokens: int | None
    request_timeout: float
    block_seconds: float
    max_blocks: int
    state_dir: Path | None
    restart_warmup_seconds: float
    drain_seconds: float
    listen_host: str
    listen_port: int
    stage: str | None
    plan: str | None
    # every route but /healthz needs it; None only when allowed; kept out of any repr
    token: str | None = field(default=None, repr=False)


def build_parser() -> argparse.ArgumentParser:
    """The flags (see README: the operator renders them)."""
    p = argparse.ArgumentParser(
        prog="specdecode-load", description="Shadow load for one side, timed per chunk."
    )
    p.add_argument("--side", choices=("baseline", "candidate"), required=True)
    p.add_argument("--shard", type=int, default=0)
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--processes", type=int, default=1, help="measuring worker processes")
    p.add_argument("--endpoint", action="append", default=[], help="http://host:port, repeat")
    p.add_argument("--model", required=True)
    prompts = p.add_mutually_exclusive_group(required=True)
    prompts.add_argument("--prompts-file", type=Path, help=f"{TRAFFIC}configMapRef/secretRef")
    prompts.add_argument("--builtin-workload", choices=WORKLOADS, help=f"{TRAFFIC}builtinWorkload")
    p.add_argument("--builtin-count", type=int, default=load_flags.BUILTIN_PROMPT_COUNT)
    p.add_argument("--seed", type=int, required=True, help=f"{TRAFFIC}seed")
    p.add_argument(
        "--max-tokens", type=int, required=True, help=f"{TRAFFIC}maxTokens (lines without)"
    )
    p.add_argument("--temperature", type=float, required=True, help=f"{TRAFFIC}temperature")
    p.add_argument("--top-p", type=float, required=True, help=f"{TRAFFIC}topP")
    shape = p.add_mutually_exclusive_group(required=True)
    shape.add_argument("--concurrency", type=int, help="closed loop: streams in this shard")
    shape.add_argument("--request-rate", type=float, help="open loop: Poisson arrivals/s")
    p.add_argument(
        "--max-in-flight", type=int, default=load_flags.MAX_IN_FLIGHT, help="open loop, a shard"
    )
    p.add_argument("--max-requests", type=int, help="this shard's request budget")
    p.add_argument("--max-output-tokens", type=int, help="this shard's output-token budget")
    p.add_argument(
        "--request-timeout", type=float, required=True, help=f"{TRAFFIC}requestTimeoutSeconds"
    )
    p.add_argument(
        "--block-seconds", type=float, required=True, help=f"{TRAFFIC}loadGenerator.blockSeconds"
    )
    p.add_argument("--max-blocks", type=int, default=load_flags.MAX_BLOCKS)
    p.add_argument("--state-dir", type=Path)
    p.add_argument("--restart-warmup-seconds", type=float, default=load_flags.WARMUP_SECONDS)
    p.add_argument(
        "--drain-seconds", type=float, default=load_flags.DRAIN_SECONDS, help="in-flight wait"
    )
    add_report_flags(p, "every route")
    return p


def parse_config(argv: list[str] | None = None) -> LoadConfig:
    """Parse and validate; any bad input exits 2 with a message (argparse's error)."""
    parser = build_parser()
    args = parser.parse_args(argv)

    def positive(name: str, value: float | None, allow_zero: bool = False) -> None:
        if value is None:
            return
        if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
            bound = ">= 0" if allow_zero else "> 0"
            parser.error(f"--{name} must be a finite number {bound}, got {value}")

    for name in ("shards", "processes", "builtin_count", "max_tokens", "concurrency"):
        positive(name.replace("_", "-"), getattr(args, name))
    for name in ("request_rate", "max_in_flight", "request_timeout", "block_seconds"):
        positive(name.replace("_", "-"), getattr(args, name))
    positive("max-blocks", args.max_blocks)
    for name in ("max_requests", "max_output_tokens", "restart_warmup_seconds", "drain_seconds"):
        positive(name.replace("_", "-"), getattr(args, name), allow_zero=True)
    if not 0 <= args.shard < args.shards:
        parser.error(f"--shard must be in [0, --shards), got {args.shard} of {args.shards}")
    server = parse_report_server(parser, args)
    try:
        endpoints = tuple(parse_endpoint(url) for url in args.endpoint)
        sampling = SamplingDefaults(temperature=args.temperature, top_p=args.top_p)
        if not 0.0 <= args.temperature <= 2.0 or not 0.0 < args.top_p <= 1.0:
            raise PromptSourceError("--temperature must be in [0, 2] and --top-p in (0, 1]")
        if args.prompts_file is not None:
            try:
                text = args.prompts_file.read_text()
            except OSError as error:
                raise PromptSourceError(f"cannot read: {error}") from error
            try:
                prompts = parse_jsonl(text, args.max_tokens, sampling)
            except PromptSourceError as error:
                raise PromptSourceError(f"--prompts-file {args.prompts_file}: {error}") from error
        else:
            prompts = builtin_prompts(
                args.builtin_workload, args.builtin_count, args.seed, args.max_tokens, sampling
            )
    except (EndpointError, PromptSourceError) as error:
        parser.error(str(error))
    return LoadConfig(
        side=args.side,
        shard=args.shard,
        shards=args.shards,
        processes=args.processes,
        endpoints=endpoints,
        model=args.model,
        prompts=tuple(prompts),
        seed=args.seed,
        concurrency=args.concurrency,
        request_rate=args.request_rate,
        max_in_flight=args.max_in_flight,
        max_requests=args.max_requests,
        max_output_tokens=args.max_output_tokens,
        request_timeout=args.request_timeout,
        block_seconds=args.block_seconds,
        max_blocks=args.max_blocks,
        state_dir=args.state_dir,
        restart_warmup_seconds=args.restart_warmup_seconds,
        drain_seconds=args.drain_seconds,
        listen_host=server.host,
        listen_port=server.port,
        stage=args.stage,
        plan=args.plan,
        token=server.token,
    )
