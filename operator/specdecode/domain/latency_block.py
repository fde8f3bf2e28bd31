"""One time block of client-side load measurements, and the one table of its fields.

Why a table: a block is merged, sent as JSON, recorded and summed over a window, and each
of those walks `BLOCK_FIELDS` (the dataclass's fields and their `kind`), so adding a
measurement is one field here. The kinds: docs/internals.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from specdecode.domain.acceptance_moments import (
    MOMENT_KEYS,
    AcceptedMoments,
    GroupEvidence,
    merge_groups,
)
from specdecode.domain.in_flight import InFlight
from specdecode.domain.sketch import Sketch

__all__ = [
    "BLOCK_FIELDS", "MOMENT_KEYS", "AcceptedMoments", "GroupEvidence", "LatencyBlock",
    "time_per_output_token",
]  # fmt: skip


def time_per_output_token(span: float, tokens_after_first_chunk: int) -> float | None:
    """A request's time per output token: its first-to-last chunk span over the tokens
    that span delivered, those after the first chunk (None when there are none).

    Why not tokens - 1 (vLLM's bench serve and GuideLLM divide by it, which is the same
    when the first chunk carries one token): a first chunk of N tokens arrives before the
    span starts, so dividing by tokens - 1 flatters by (N - 1) / (tokens - 1).
    """
    return span / tokens_after_first_chunk if tokens_after_first_chunk > 0 else None


Kind = Literal["sketch", "count", "sum", "tally", "moments", "groups", "latest", "snapshot"]


def _m(kind: Kind, optional: bool = False) -> dict[str, object]:
    return {"kind": kind, "optional": optional}


@dataclass(frozen=True)
class LatencyBlock:
    """What one load shard measured on one engine during one time block.

    Blocks are aligned to wall-clock multiples of their length and hold events by the time
    they happened (a chunk gap by its arrival, a request's totals by its end), so blocks
    from several shards of one side merge, and a stage's window is a set of whole blocks.
    Why blocks: chunks of one engine step arrive together and share its duration, so
    samples are dependent within a short time span; whole blocks are the honest unit of
    independence for the tail-latency statistics (see the gates), and they bound memory.
    What a failed or hung request contributes is defined in `specdecode_load.connection`.
    """

    start: float  # unix seconds
    seconds: float
    # one count per chunk gap; a request that ends unfinished adds its last wait as one gap
    per_chunk_itl: Sketch = field(default_factory=Sketch, metadata=_m("sketch"))
    # gap / tokens, weighted by tokens (an unfinished request's last wait: one token)
    per_token_itl: Sketch = field(default_factory=Sketch, metadata=_m("sketch"))
    # one per request with a first token (`time_per_output_token`; an unfinished one up to
    # its end, the token it waited for counted)
    time_per_output_token: Sketch = field(default_factory=Sketch, metadata=_m("sketch"))
    time_to_first_token: Sketch = field(default_factory=Sketch, metadata=_m("sketch"))
    client_delay: Sketch = field(default_factory=Sketch, metadata=_m("sketch"))  # own probe
    # how long each sent request held its slot (send to end), whatever its outcome
    slot_seconds: Sketch = field(default_factory=Sketch, metadata=_m("sketch", optional=True))
    requests_ok: int = field(default=0, metadata=_m("count"))
    requests_failed: int = field(default=0, metadata=_m("count"))  # the sum of `failures`
    # failed requests by outcome: "http_<status>", "stream_cut", "stream_error", "timeout",
    # "connect_error" (see specdecode_load.connection)
    failures: Mapping[str, int] = field(default_factory=dict, metadata=_m("tally", True))
    output_tokens: int = field(default=0, metadata=_m("count"))
    chunks: int = field(default=0, metadata=_m("count"))
    # chunks read together with an earlier one (timestamps shared)
    merged_chunks: int = field(default=0, metadata=_m("count"))
    # stalls: waits that ended a request unfinished (also in the ITL sketches above)
    stalls: int = field(default=0, metadata=_m("count", optional=True))
    # open-loop arrivals never sent: the sender fell over MAX_ARRIVAL_LAG_SECONDS behind
    # its schedule (see specdecode_load.schedule.next_arrival)
    arrivals_skipped: int = field(default=0, metadata=_m("count", optional=True))
    accepted: AcceptedMoments = field(default_factory=AcceptedMoments, metadata=_m("moments"))
    # the same evidence per traffic group (`traffic_groups`: "class/temperature/length"),
    # with the engine's per-request metrics where its final chunk carried them
    by_traffic: Mapping[str, GroupEvidence] = field(
        default_factory=dict, metadata=_m("groups", optional=True)
    )
    last_error: str | None = field(default=None, metadata=_m("latest"))
    # requests in flight at the block's end (None: a load pod too old to say)
    in_flight: InFlight | None = field(default=None, metadata=_m("snapshot", optional=True))

    def plus(self, other: LatencyBlock) -> LatencyBlock:
        """This block and another of the same time span (another shard) together."""
        merged = {
            f.name: merge_values(f.kind, (self, other), f.name, same_span=True)
            for f in BLOCK_FIELDS
        }
        return LatencyBlock(start=self.start, seconds=max(self.seconds, other.seconds), **merged)


@dataclass(frozen=True)
class BlockField:
    """One measurement of a block: attribute name, wire key, how it merges."""

    name: str
    key: str
    kind: Kind
    optional: bool

    def fresh(self) -> Any:
        """The empty value (what a block with no events holds)."""
        return empty_value(self.kind)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


BLOCK_FIELDS: tuple[BlockField, ...] = tuple(
    BlockField(f.name, _camel(f.name), f.metadata["kind"], bool(f.metadata["optional"]))
    for f in dataclasses.fields(LatencyBlock)
    if "kind" in f.metadata
)


def empty_value(kind: Kind) -> Any:
    """A kind's empty value."""
    return _EMPTY[kind]()


_EMPTY: dict[str, Callable[[], Any]] = {
    "sketch": Sketch,
    "count": int,
    "sum": float,
    "tally": dict,
    "moments": AcceptedMoments,
    "groups": dict,
    "latest": lambda: None,
    "snapshot": lambda: None,
}


def merge_values(kind: Kind, blocks: Iterable[object], name: str, same_span: bool = False) -> Any:
    """One field of several blocks (or any objects with that attribute) together.

    `same_span`: the blocks cover one time span (shards, workers), so snapshots add up;
    else they follow each other in time and the newest snapshot is the state now.
    """
    values = [getattr(b, name) for b in blocks]
    if kind == "snapshot":
        known = [v for v in values if v is not None]
        if not same_span:
            return values[-1] if values else None  # unknown now if the newest is unknown
        union: InFlight | None = None
        for snapshot in known:
            union = snapshot if union is None else union.plus(snapshot)
        return union
    if kind == "sketch":
        total = Sketch()
        for sketch in values:
            total.merge(sketch)
        return total
    if kind in ("count", "sum"):
        return sum(values)
    if kind == "tally":
        tally: dict[str, int] = {}
        for counts in values:
            for key, count in counts.items():
                tally[key] = tally.get(key, 0) + count
        return tally
    if kind == "moments":
        moments = AcceptedMoments()
        for value in values:
            moments = moments.plus(value)
        return moments
    if kind == "groups":
        return merge_groups(values)
    return next((v for v in reversed(values) if v is not None), None)  # latest
