"""What one operator process remembers between reconciles: caches, each re-derivable.

Why: nothing here decides; every decision reads the rollout's status or the observed cluster
(issue 35 item 2), so a restarted process starts with these empty and reaches the same
decisions at the cost of a request or two: `WriteEcho` (our writes the watch has not
delivered yet; the promotion ConfigMap's content, read back once per process),
`LoadPodCache` (the load token, the endpoints each load pod echoes) and `GuardReads` (the
drift guard's latest look read). More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class WriteEcho:
    """Our own last writes, until the watch echoes them."""

    stale_versions: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per rollout, the resourceVersions our last status writes replaced."""
    finished_tunings: dict[str, int] = field(default_factory=dict)
    """Per tuning, the generation this process finished (Succeeded or Failed)."""
    promotion_files: dict[str, Mapping[str, str] | None] = field(default_factory=dict)
    """Per rollout, the data its promotion ConfigMap holds in the cluster, as last read
    (`reconciler.observe`, once per process) or written (None: none of ours there)."""

    def replaced(self, key: str, versions: Iterable[str]) -> None:
        """Our status write replaced these versions of the rollout: copies at them are stale."""
        self.stale_versions[key] = frozenset(v for v in versions if v)

    def is_stale(self, key: str, version: str) -> bool:
        """Whether a copy at `version` predates our own last status write."""
        return bool(version) and version in self.stale_versions.get(key, frozenset())

    def forget(self, key: str) -> None:
        """The rollout (or tuning) is gone."""
        self.stale_versions.pop(key, None)
        self.finished_tunings.pop(key, None)
        self.promotion_files.pop(key, None)


@dataclass
class LoadPodCache:
    """The load token and the endpoints each load pod (or splitter side) uses."""

    tokens: dict[str, str] = field(default_factory=dict)
    """Per rollout, the token its load pods require (`adapters.kube.load_token`)."""
    endpoints: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    """Per rollout, per load pod: the engine endpoints its report echoed, or we pushed since."""
    splitter_endpoints: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    """The same for the Mirror splitter, per "<pod>/<side>"."""
    unechoed_pushed_at: dict[str, float] = field(default_factory=dict)
    """When pods without a known echo were last pushed (monotonic): pushes repeat on a
    timer, not every reconcile."""

    def forget_endpoints(self, key: str) -> None:
        """The rollout's load pods are gone (or not wanted)."""
        self.endpoints.pop(key, None)
        self.unechoed_pushed_at.pop(key, None)

    def forget(self, key: str) -> None:
        """The rollout is gone."""
        self.forget_endpoints(key)
        self.tokens.pop(key, None)
        self.splitter_endpoints.pop(key, None)


@dataclass
class GuardReads:
    """The drift guard's reads: the latest look read, and windows already said too short."""

    judged: dict[str, datetime] = field(default_factory=dict)
    """Per rollout, the instant of the latest look read and judged."""
    said_blind: set[str] = field(default_factory=set)
    """Rollouts whose guard window was said too short for the scrape interval (log once)."""

    def forget(self, key: str) -> None:
        """The rollout is gone."""
        self.judged.pop(key, None)
        self.said_blind.discard(key)
