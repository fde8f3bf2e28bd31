"""A speculative config as vLLM's JSON document: its exact text, its fingerprint and what
its per-batch-size schedule gives at a batch size.

Why below both the api and the domain: the wire's `SpeculativeConfig` and the domain's
`SpeculativeSetting` name a config by the same fingerprint (labels, status, the shadows'
readiness), and the domain builds a config of its own (the schedule offer). Written once
here, the two can never hash or read a schedule apart; the renderers take either
(`RunnableConfig`). Pure: json and hashlib only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from specdecode.vocabulary import NO_SPECULATION


def cli_json(document: Mapping[str, Any]) -> str:
    """The exact `--speculative-config` argument of `document` (vLLM's keys, no nulls):
    compact, keys sorted."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def document_fingerprint(document: Mapping[str, Any]) -> str:
    """A short stable hash that names the config `document` in labels and status."""
    return hashlib.sha256(cli_json(document).encode()).hexdigest()[:10]


def k_zero_possible(schedule: Sequence[Sequence[int]] | None, batch: int | None) -> bool:
    """Whether `schedule` ([start, end, k] ranges; None: k at every batch size) may give
    k = 0 at a stage's load: at `batch`, or anywhere for a requestRate stage (`batch` None:
    its batch sizes are unknown). Zero drafts is then what the schedule asks for, not a
    finding against the config (`no_drafts`)."""
    if not schedule:
        return False
    return any(k == 0 and (batch is None or low <= batch <= high) for low, high, k in schedule)


class RunnableConfig(Protocol):
    """What running an engine on a config reads of it (the wire's and the domain's alike)."""

    def to_cli_json(self) -> str:
        """The exact `--speculative-config` argument."""
        ...

    def fingerprint(self) -> str:
        """The config's name in labels and status."""
        ...


def fingerprint_of(config: RunnableConfig | None) -> str:
    """A config's fingerprint, as labels and status name it; plain decoding is "none"."""
    return NO_SPECULATION if config is None else config.fingerprint()
