"""The load pods' report: what one shard measured, as JSON over HTTP, in one place.

Why one place: the load pods write it and the operator reads it with the same functions, so
the wire format cannot drift. A report that does not parse raises `ReportError` naming the
field (a gate Error, never missing latency). The wire format: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specdecode.domain.acceptance_moments import (
    groups_from_wire,
    groups_to_wire,
    moments_from_wire,
    moments_to_wire,
)
from specdecode.domain.in_flight import in_flight_from_wire, in_flight_to_wire
from specdecode.domain.latency_block import BLOCK_FIELDS, LatencyBlock
from specdecode.domain.sketch import Sketch
from specdecode.domain.traffic_groups import parse_key

SCHEMA = 1

TOKEN_ENV = "SPECDECODE_LOAD_TOKEN"  # the operator sets it; the load pod reads it


class ReportError(ValueError):
    """A load report that does not parse; the message names the field."""


@dataclass(frozen=True)
class Gap:
    """A span of the shard's time that has no samples, and why (e.g. a restart)."""

    start: float
    end: float
    reason: str


@dataclass(frozen=True)
class LoadReport:
    """One shard's answer to a report request."""

    side: str
    shard: int
    shards: int
    boot_time: float
    restarts: int
    block_seconds: float
    sent: int
    output_tokens: int
    cap_reached: bool
    blocks: tuple[LatencyBlock, ...]
    gaps: tuple[Gap, ...] = ()
    waiting_for: str | None = None
    processes: int = 1
    first_boot_time: float | None = None
    endpoints: tuple[str, ...] | None = None  # None: the pod does not say (older image)


def block_to_wire(block: LatencyBlock) -> dict[str, Any]:
    """A block as JSON-ready data (every field of `BLOCK_FIELDS`, camel-case keys)."""
    wire: dict[str, Any] = {"start": block.start, "seconds": block.seconds}
    for f in BLOCK_FIELDS:
        value = getattr(block, f.name)
        if f.kind == "sketch":
            value = value.to_wire()
        elif f.kind == "moments":
            value = moments_to_wire(value)
        elif f.kind == "groups":
            value = groups_to_wire(value)
        elif f.kind == "tally":
            value = dict(value)
        elif f.kind == "snapshot":
            value = in_flight_to_wire(value)
        wire[f.key] = value
    return wire


def block_from_wire(data: Mapping[str, Any]) -> LatencyBlock:
    """Parse `block_to_wire`'s form (an `optional` field may be absent: older pods)."""
    try:
        values = {
            f.name: _value_from_wire(f.kind, data[f.key], f.key)
            if f.key in data or not f.optional
            else f.fresh()
            for f in BLOCK_FIELDS
        }
        return LatencyBlock(start=float(data["start"]), seconds=float(data["seconds"]), **values)
    except KeyError as missing:
        raise ReportError(f"load report block: missing {missing}") from missing
    except (TypeError, ValueError, AttributeError) as error:
        if isinstance(error, ReportError):
            raise
        raise ReportError(f"load report block: {error}") from error


def _value_from_wire(kind: str, value: Any, key: str) -> Any:
    if kind == "sketch":
        return Sketch.from_wire(value)
    if kind == "count":
        return _count(value, key)
    if kind == "sum":
        return float(value)
    if kind == "tally":
        return {str(name): _count(n, f"{key}.{name}") for name, n in value.items()}
    if kind == "moments":
        return moments_from_wire(value, lambda n: _count(n, f"{key}.requests"))
    if kind == "groups":
        groups = groups_from_wire(value, lambda n: _count(n, f"{key} count"))
        for group in groups:
            parse_key(group)  # a label tuple, or the report is malformed
        return groups
    if kind == "snapshot":
        return in_flight_from_wire(value)
    return None if value is None else str(value)  # latest


def report_to_wire(report: LoadReport) -> dict[str, Any]:
    """A whole report as JSON-ready data."""
    return {
        "schema": SCHEMA,
        "side": report.side,
        "shard": report.shard,
        "shards": report.shards,
        "processes": report.processes,
        "bootTime": report.boot_time,
        "firstBootTime": report.first_boot_time,
        "restarts": report.restarts,
        "blockSeconds": report.block_seconds,
        "sent": report.sent,
        "outputTokens": report.output_tokens,
        "capReached": report.cap_reached,
        "waitingFor": report.waiting_for,
        "gaps": [{"from": g.start, "to": g.end, "reason": g.reason} for g in report.gaps],
        "blocks": [block_to_wire(b) for b in report.blocks],
        **({} if report.endpoints is None else {"endpoints": list(report.endpoints)}),
    }


def report_from_wire(data: Mapping[str, Any]) -> LoadReport:
    """Parse a report; a wrong schema or a malformed field raises ReportError."""
    if data.get("schema") != SCHEMA:
        raise ReportError(f"load report: schema {data.get('schema')!r}, expected {SCHEMA}")
    try:
        first_boot = data.get("firstBootTime")
        return LoadReport(
            side=str(data["side"]),
            shard=_count(data["shard"], "shard"),
            shards=_count(data["shards"], "shards"),
            processes=_count(data.get("processes", 1), "processes"),
            boot_time=float(data["bootTime"]),
            first_boot_time=None if first_boot is None else float(first_boot),
            restarts=_count(data["restarts"], "restarts"),
            block_seconds=float(data["blockSeconds"]),
            sent=_count(data["sent"], "sent"),
            output_tokens=_count(data["outputTokens"], "outputTokens"),
            cap_reached=bool(data["capReached"]),
            waiting_for=None if data.get("waitingFor") is None else str(data["waitingFor"]),
            gaps=tuple(
                Gap(float(g["from"]), float(g["to"]), str(g["reason"])) for g in data["gaps"]
            ),
            blocks=tuple(block_from_wire(b) for b in data["blocks"]),
            endpoints=_endpoints(data.get("endpoints")),
        )
    except KeyError as missing:
        raise ReportError(f"load report: missing {missing}") from missing
    except (TypeError, ValueError) as error:
        if isinstance(error, ReportError):
            raise
        raise ReportError(f"load report: {error}") from error


def _endpoints(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(url, str) for url in value):
        raise ReportError(f"load report: endpoints must be a list of URLs, got {value!r}")
    return tuple(value)


def _count(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ReportError(f"load report: {key} must be an integer >= 0, got {value!r}")
    return value
