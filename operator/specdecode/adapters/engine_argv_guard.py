"""The last check before an engine Deployment leaves the renderer: its argv, read as vLLM
reads it, runs exactly the speculative config the decision chose for that role.

Why a second check after admission: the argv is assembled here from several fields and
templates, and a baseline that speculates (or an engine that stops logging the stats the
gates read) would silently corrupt every verdict, so rendering raises instead.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specdecode.api import engine_args
from specdecode.api.engine_flag_classes import FlagClass
from specdecode.domain.observations import ChildRole
from specdecode.speculative_document import RunnableConfig

SPECULATIVE_FLAG = "--speculative-config"


class UnsafeEngineArgs(ValueError):
    """A rendered engine argv would run an ungated speculative config or lose its stats."""


def check_engine_argv(argv: Sequence[str], role: ChildRole, config: RunnableConfig | None) -> None:
    """Raise unless `argv` sets the speculative config only as the operator's own
    `--speculative-config <config>` (nothing at all for plain decoding, no `--spec-method`)
    and never sets a destination that turns the engine's stats off or leaves it
    unjudgeable."""
    speculative = engine_args.hits_of(argv, FlagClass.SPECULATIVE)
    expected = [] if config is None else [(SPECULATIVE_FLAG, config.to_cli_json())]
    found = [(hit.arg, _next(argv, hit.index)) for hit in speculative]
    if found != expected:
        raise UnsafeEngineArgs(
            f"{role.value} engine argv sets the speculative config as "
            f"{[hit.arg for hit in speculative]}; expected "
            f"{'none' if config is None else SPECULATIVE_FLAG + ' ' + config.to_cli_json()}"
        )
    blind = engine_args.hits_of(argv, FlagClass.STATS_OFF, FlagClass.UNJUDGEABLE)
    if blind:
        raise UnsafeEngineArgs(
            f"{role.value} engine argv turns its stats off or could not be judged: "
            + ", ".join(f"{hit.arg!r} ({hit.reserved.dest})" for hit in blind)
        )


def container_args(deployment: dict[str, Any]) -> list[str]:
    """The vLLM container's args of a rendered engine Deployment."""
    containers = deployment["spec"]["template"]["spec"]["containers"]
    vllm = next(container for container in containers if container["name"] == "vllm")
    return [str(arg) for arg in vllm["args"]]


def _next(argv: Sequence[str], index: int) -> str | None:
    return argv[index + 1] if index + 1 < len(argv) else None
