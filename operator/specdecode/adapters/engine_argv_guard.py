"""The last check before an engine Deployment leaves the renderer: its argv, read as vLLM
reads it, runs exactly the speculative config the operator chose for that role and keeps
the stats every gate reads.

The config a role runs is the decision's (`DesiredChildren`): plain decoding for the
baseline and production until a promotion, production's stable config for both after one,
the candidate's config for the candidate. Nothing else in the argv may set one.

Why a second check after the models: extraArgs are validated when a rollout is admitted,
but the argv is assembled here from several fields and templates, and a baseline that runs
a speculative config (or an engine that stops logging stats) would silently corrupt every
verdict. So the rendered container args are parsed again (`api.engine_args`) and rendering
raises instead of emitting such a Deployment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specdecode.api import engine_args
from specdecode.api.speculative import SpeculativeConfig
from specdecode.domain.observations import ChildRole

SPECULATIVE_FLAG = "--speculative-config"
# Destinations no engine may set at all: each switches off what the gates read.
STATS_OFF = ("disable_log_stats", "headless", "config")


class UnsafeEngineArgs(ValueError):
    """A rendered engine argv would run an ungated speculative config or lose its stats."""


def check_engine_argv(
    argv: Sequence[str], role: ChildRole, config: SpeculativeConfig | None
) -> None:
    """Raise unless `argv` sets the speculative config only as the operator's own
    `--speculative-config <config>` (nothing at all for plain decoding) and never sets a
    destination that turns the engine's stats off."""
    hits = engine_args.reserved_hits(argv)
    speculative = [hit for hit in hits if hit.reserved.dest == "speculative_config"]
    expected = [] if config is None else [(SPECULATIVE_FLAG, config.to_cli_json())]
    found = [(hit.arg, _next(argv, hit.index)) for hit in speculative]
    if found != expected:
        raise UnsafeEngineArgs(
            f"{role.value} engine argv sets the speculative config as "
            f"{[hit.arg for hit in speculative]}; expected "
            f"{'none' if config is None else SPECULATIVE_FLAG + ' ' + config.to_cli_json()}"
        )
    stats_off = [hit for hit in hits if hit.reserved.dest in STATS_OFF]
    if stats_off:
        raise UnsafeEngineArgs(
            f"{role.value} engine argv turns its stats off: "
            + ", ".join(repr(hit.arg) for hit in stats_off)
        )


def container_args(deployment: dict[str, Any]) -> list[str]:
    """The vLLM container's args of a rendered engine Deployment."""
    containers = deployment["spec"]["template"]["spec"]["containers"]
    vllm = next(container for container in containers if container["name"] == "vllm")
    return [str(arg) for arg in vllm["args"]]


def _next(argv: Sequence[str], index: int) -> str | None:
    return argv[index + 1] if index + 1 < len(argv) else None
