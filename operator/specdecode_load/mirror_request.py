"""A mirrored request as the splitter forwards it: streamed, labelled, and nothing else.

Why a body rewrite and a header allow-list: the splitter times chunks, so every forward
streams with per-chunk usage; headers are rebuilt with only `X-Workload-Class`, so a
caller's credentials never reach a shadow. Traffic groups are bounded (`GroupBook`);
nothing keeps or logs prompt text. More: docs/internals.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from specdecode.domain.prompts import CLASS_LABEL
from specdecode.domain.traffic_groups import (
    MAX_GROUPS,
    OTHER_GROUP,
    UNLABELLED,
    TrafficGroup,
    length_band,
    temperature_band,
)

MIRRORED_PATHS = ("/v1/chat/completions", "/v1/completions")
WORKLOAD_HEADER = b"x-workload-class"
# OpenAI's defaults when a request leaves them out: temperature 1; no max_tokens means as
# long as the context allows (banded "long").
DEFAULT_TEMPERATURE = 1.0
UNBOUNDED_TOKENS = 1 << 30
STREAM_OPTIONS = {"include_usage": True, "continuous_usage_stats": True}


class NotMirrorable(ValueError):
    """A request the splitter does not forward (the message says why, never the body)."""


@dataclass(frozen=True)
class MirroredRequest:
    """What goes to both shadows: the path, the rewritten body, the label and group."""

    path: str
    body: bytes
    workload: str | None
    group: TrafficGroup


def prepare(path: str, workload_header: bytes | None, body: bytes) -> MirroredRequest:
    """The forwarded form of one mirrored request (NotMirrorable if it cannot be one)."""
    path = path.split("?", 1)[0]
    if path not in MIRRORED_PATHS:
        raise NotMirrorable(f"path {path[:80]!r} is not a completions route")
    try:
        data = json.loads(body)
    except ValueError as error:
        raise NotMirrorable(f"body is not JSON ({type(error).__name__})") from error
    if not isinstance(data, dict):
        raise NotMirrorable("body is not a JSON object")
    options = data.get("stream_options")
    data["stream"] = True
    data["stream_options"] = {**(options if isinstance(options, dict) else {}), **STREAM_OPTIONS}
    workload = _label(workload_header)
    group = TrafficGroup(
        workload or UNLABELLED,
        temperature_band(_number(data.get("temperature"), DEFAULT_TEMPERATURE)),
        length_band(int(_number(_max_tokens(data), UNBOUNDED_TOKENS))),
    )
    forwarded = json.dumps(data, separators=(",", ":")).encode()
    return MirroredRequest(path, forwarded, workload, group)


def _label(header: bytes | None) -> str | None:
    """The traffic label, if the header carries a valid one (else the request is unlabelled)."""
    if not header:
        return None
    text = header.decode(errors="replace").strip()
    return text if CLASS_LABEL.fullmatch(text) else None


def _max_tokens(data: dict[str, object]) -> object:
    value = data.get("max_completion_tokens")
    return data.get("max_tokens") if value is None else value


def _number(value: object, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return default
    return float(value)


class GroupBook:
    """The group keys one splitter reports: the first MAX_GROUPS - 1 seen, then `other`."""

    def __init__(self) -> None:
        self._known: set[str] = set()

    def key(self, group: TrafficGroup) -> str:
        """The key a request of `group` is recorded under."""
        key = group.key
        if key in self._known:
            return key
        if len(self._known) < MAX_GROUPS - 1:
            self._known.add(key)
            return key
        return OTHER_GROUP.key
