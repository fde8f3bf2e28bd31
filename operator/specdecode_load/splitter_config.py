"""Flags of `specdecode-load split`: the shadow splitter, validated once into a config.

Why a subcommand of the load program rather than a program of its own: the splitter is
the same instrument (connections, recorder, block reports) in the same image, fed by a
mirror instead of a prompt set, so the operator runs one image and reads one report
protocol. Like `config`, every bad input stops the program at start with exit code 2
naming the flag, and the report routes need the rollout's token unless told otherwise.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

from specdecode.domain import load_flags
from specdecode_load.pool import Endpoint, EndpointError, parse_endpoint
from specdecode_load.report_server import add_report_flags, parse_report_server

SIDES = load_flags.SPLITTER_SIDES


@dataclass(frozen=True)
class SplitterConfig:
    """The splitter's configuration."""

    endpoints: dict[str, tuple[Endpoint, ...]]  # by side
    max_in_flight: int
    request_timeout: float
    block_seconds: float
    max_blocks: int
    drain_seconds: float
    listen_host: str
    listen_port: int  # reports, health, endpoint pushes (token)
    mirror_port: int  # mirrored requests (no token: a gateway's mirror sends them)
    stage: str | None
    plan: str | None
    token: str | None = field(default=None, repr=False)


def build_parser() -> argparse.ArgumentParser:
    """The flags (docs/traffic.md: the operator renders them)."""
    p = argparse.ArgumentParser(
        prog="specdecode-load split",
        description="Shadow splitter: each mirrored request to baseline and candidate at "
        "the same instant, both streams timed per chunk.",
    )
    for side in SIDES:
        p.add_argument(f"--{side}", action="append", default=[], help="http://host:port, repeat")
    p.add_argument(
        "--max-in-flight",
        type=int,
        required=True,
        help="pairs in flight; beyond: shed (spec.analysis.traffic.splitter.maxInFlight)",
    )
    p.add_argument("--request-timeout", type=float, required=True, help="per request and side")
    p.add_argument("--block-seconds", type=float, required=True)
    p.add_argument("--max-blocks", type=int, default=load_flags.MAX_BLOCKS)
    p.add_argument("--drain-seconds", type=float, default=load_flags.DRAIN_SECONDS)
    p.add_argument(
        "--mirror-port", type=int, default=load_flags.MIRROR_PORT, help="mirrored requests"
    )
    add_report_flags(p, "the report routes")
    return p


def parse_splitter_config(argv: list[str]) -> SplitterConfig:
    """Parse and validate; any bad input exits 2 with a message (argparse's error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("max_in_flight", "request_timeout", "block_seconds", "max_blocks"):
        value = getattr(args, name)
        if not math.isfinite(value) or value <= 0:
            parser.error(f"--{name.replace('_', '-')} must be a finite number > 0, got {value}")
    if not math.isfinite(args.drain_seconds) or args.drain_seconds < 0:
        parser.error(f"--drain-seconds must be a finite number >= 0, got {args.drain_seconds}")
    if not 0 <= args.mirror_port < 65536:
        parser.error(f"--mirror-port must be a port, got {args.mirror_port}")
    server = parse_report_server(parser, args)
    try:
        endpoints = {s: tuple(parse_endpoint(u) for u in getattr(args, s)) for s in SIDES}
    except EndpointError as error:
        parser.error(str(error))
    return SplitterConfig(
        endpoints=endpoints,
        max_in_flight=args.max_in_flight,
        request_timeout=args.request_timeout,
        block_seconds=args.block_seconds,
        max_blocks=args.max_blocks,
        drain_seconds=args.drain_seconds,
        listen_host=server.host,
        listen_port=server.port,
        mirror_port=args.mirror_port,
        stage=args.stage,
        plan=args.plan,
        token=server.token,
    )
