"""The report server's flags, shared by both load programs (`config`, `splitter_config`).

Why one place: the load pods and the splitter serve the same report protocol on the same
port with the same token rule, and the operator renders these flags for both. Fail closed:
without the rollout's token anyone who reaches the pod could read its report and push it
endpoints, so an empty token stops the program at start unless `--allow-no-token` says
this is a local run.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

from specdecode.domain import load_flags
from specdecode.domain.load_report import TOKEN_ENV

BIND_HOST_ENV = "SPECDECODE_BIND_HOST"


@dataclass(frozen=True)
class ReportServer:
    """Where the report server listens and the token its routes need."""

    host: str
    port: int
    # every route but /healthz needs it; None only when allowed; kept out of any repr
    token: str | None = field(default=None, repr=False)


def add_report_flags(parser: argparse.ArgumentParser, open_routes: str) -> None:
    """--listen, --stage, --plan and --allow-no-token (`open_routes`: what it opens)."""
    listen = f"{load_flags.LISTEN_HOST}:{load_flags.REPORT_PORT}"
    parser.add_argument("--listen", default=listen, help=f"HOST:PORT ({BIND_HOST_ENV} sets HOST)")
    parser.add_argument("--stage", help="echoed in the report")
    parser.add_argument("--plan", help="echoed in the report")
    parser.add_argument(
        "--allow-no-token",
        action="store_true",
        help=f"serve {open_routes} to anyone when ${TOKEN_ENV} is empty (local runs only)",
    )


def parse_report_server(parser: argparse.ArgumentParser, args: argparse.Namespace) -> ReportServer:
    """The listen address (${BIND_HOST_ENV} overrides its host) and the token; any bad
    input exits 2 (argparse's error)."""
    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        parser.error(f"--listen must be HOST:PORT, got {args.listen!r}")
    token = os.environ.get(TOKEN_ENV) or None
    if token is None and not args.allow_no_token:
        parser.error(
            f"${TOKEN_ENV} is empty: the report and endpoint routes would be open to anyone "
            "(the operator sets it from the rollout's load-token Secret; --allow-no-token "
            "for a local run)"
        )
    return ReportServer(os.environ.get(BIND_HOST_ENV) or host, int(port), token)
