"""Per-request acceptance evidence as mergeable sums, and its wire form.

Why sums of per-request moments: the bounds treat requests as the independent units and
the operator merges evidence over workers, shards and blocks; sums of n, a, n^2, a*n, a^2
add. Two sources kept apart: the stream (biased up when chunks merge) and the engine's
per-request metrics (vLLM >= 0.29). Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AcceptedMoments:
    """Per-request sums that give acceptance from the streamed chunks themselves.

    A streamed chunk carries the tokens of one engine step, so for one request
    n = decode chunks (steps after the first token) and a = tokens beyond one per chunk
    (accepted draft tokens). Kept as sums over finished requests of n, a, n^2, a*n and
    a^2: mergeable across blocks and shards, and exactly what a cluster-robust (requests
    as the independent units) variance of a / n needs, with no assumed correlation.
    """

    requests: int = 0
    steps: float = 0.0
    accepted: float = 0.0
    steps_sq: float = 0.0
    accepted_steps: float = 0.0
    accepted_sq: float = 0.0

    def plus(self, other: AcceptedMoments) -> AcceptedMoments:
        """Both sets of requests together."""
        return AcceptedMoments(
            *(getattr(self, f.name) + getattr(other, f.name) for f in _MOMENT_FIELDS)
        )

    @classmethod
    def one(cls, n: float, a: float) -> AcceptedMoments:
        """One request's (n, a)."""
        return cls(1, n, a, n * n, a * n, a * a)

    @classmethod
    def of(cls, per_request: Iterable[tuple[float, float]]) -> AcceptedMoments:
        """From (steps, accepted) per request."""
        total = cls()
        for n, a in per_request:
            total = total.plus(cls.one(n, a))
        return total


_MOMENT_FIELDS = dataclasses.fields(AcceptedMoments)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


MOMENT_KEYS: tuple[tuple[str, str], ...] = tuple((f.name, _camel(f.name)) for f in _MOMENT_FIELDS)


@dataclass(frozen=True)
class GroupEvidence:
    """One traffic group's acceptance evidence over its finished requests.

    `stream`: every finished request's (decode chunks, accepted tokens). `engine`: only
    requests whose final chunk carried the engine's per-request metrics, as (draft
    tokens, accepted draft tokens); `engine_steps` sums their verify steps.
    """

    stream: AcceptedMoments = AcceptedMoments()
    engine: AcceptedMoments = AcceptedMoments()
    engine_steps: int = 0

    @property
    def requests(self) -> int:
        """Finished requests behind the evidence."""
        return max(self.stream.requests, self.engine.requests)

    def plus(self, other: GroupEvidence) -> GroupEvidence:
        """Both groups' requests together."""
        return GroupEvidence(
            self.stream.plus(other.stream),
            self.engine.plus(other.engine),
            self.engine_steps + other.engine_steps,
        )


def merge_groups(groups: Iterable[Mapping[str, GroupEvidence]]) -> dict[str, GroupEvidence]:
    """Several blocks' (or shards') groups together, key by key."""
    total: dict[str, GroupEvidence] = {}
    for by_key in groups:
        for key, evidence in by_key.items():
            known = total.get(key)
            total[key] = evidence if known is None else known.plus(evidence)
    return total


def moments_to_wire(moments: AcceptedMoments) -> dict[str, Any]:
    """Camel-case keys, as the load report writes them."""
    return {key: getattr(moments, attr) for attr, key in MOMENT_KEYS}


def moments_from_wire(value: Mapping[str, Any], count: Callable[[Any], int]) -> AcceptedMoments:
    """`moments_to_wire`'s form; `count` checks the request count (an integer >= 0)."""
    (_, requests), *sums = MOMENT_KEYS  # requests first: a count, then float sums
    return AcceptedMoments(count(value[requests]), *(float(value[key]) for _, key in sums))


def groups_to_wire(groups: Mapping[str, GroupEvidence]) -> dict[str, Any]:
    """Groups by key; the engine's part only where some request carried it."""
    wire: dict[str, Any] = {}
    for key, evidence in groups.items():
        entry: dict[str, Any] = {"stream": moments_to_wire(evidence.stream)}
        if evidence.engine.requests:
            entry["engine"] = moments_to_wire(evidence.engine)
            entry["engineSteps"] = evidence.engine_steps
        wire[key] = entry
    return wire


def groups_from_wire(
    value: Mapping[str, Any], count: Callable[[Any], int]
) -> dict[str, GroupEvidence]:
    """`groups_to_wire`'s form (KeyError, TypeError or ValueError when malformed)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object of traffic groups, got {value!r}")
    groups: dict[str, GroupEvidence] = {}
    for key, entry in value.items():
        engine = entry.get("engine")
        groups[str(key)] = GroupEvidence(
            moments_from_wire(entry["stream"], count),
            AcceptedMoments() if engine is None else moments_from_wire(engine, count),
            0 if engine is None else count(entry.get("engineSteps", 0)),
        )
    return groups
