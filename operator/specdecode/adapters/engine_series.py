"""The scrape check's memory: per rollout, whether its current engine pods were seen in
Prometheus, so the check asks once per pod set and not on every reconcile.

Once every settled pod answered, nothing is asked again until the pod names change; while
some are missing, no sooner than `RECHECK_SECONDS` after the last answer, so a hundred
unscraped rollouts cost a few cheap queries a second. More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from specdecode.adapters.metrics.protocol import EngineSeriesSource
from specdecode.adapters.render import ROLE_LABEL
from specdecode.domain.engine_metrics import EnginePod
from specdecode.domain.observations import ChildRole, MetricError

RECHECK_SECONDS = 15.0
RECHECK = timedelta(seconds=RECHECK_SECONDS)
SHADOW_ROLES = frozenset({ChildRole.BASELINE.value, ChildRole.CANDIDATE.value})


def shadow_engine_pods(pods: Iterable[Mapping[str, Any]]) -> list[EnginePod]:
    """The baseline and candidate pods among a rollout's pods, with their Ready time."""
    found = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        if (metadata.get("labels") or {}).get(ROLE_LABEL) not in SHADOW_ROLES:
            continue
        if metadata.get("deletionTimestamp"):
            continue  # going away: its series are going too
        found.append(EnginePod(str(metadata.get("name")), _ready_since(pod)))
    return found


def _ready_since(pod: Mapping[str, Any]) -> datetime | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True" or not ready.get("lastTransitionTime"):
        return None
    try:
        return datetime.fromisoformat(str(ready["lastTransitionTime"]).replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass
class _Answer:
    pods: tuple[str, ...]
    scraped: frozenset[str] | None  # None: Prometheus did not answer
    at: datetime

    @property
    def complete(self) -> bool:
        return self.scraped is not None and set(self.pods) <= self.scraped


class EngineSeriesMemory:
    """Per rollout ("namespace/name"): what Prometheus last answered and when, and when
    the next engine pod's grace ends (a reconcile must happen then: no event marks it)."""

    def __init__(self) -> None:
        self._answers: dict[str, _Answer] = {}
        self._settles_at: dict[str, datetime] = {}

    def next_check(self, rollout: str) -> datetime | None:
        """When the rollout must be reconciled for the check (None: not for it)."""
        answer = self._answers.get(rollout)
        recheck = None if answer is None or answer.complete else answer.at + RECHECK
        times = [t for t in (recheck, self._settles_at.get(rollout)) if t is not None]
        return min(times) if times else None

    def expect(self, rollout: str, settles_at: datetime | None) -> None:
        """Remember when the next Ready engine pod's grace ends (None: no such pod)."""
        if settles_at is None:
            self._settles_at.pop(rollout, None)
        else:
            self._settles_at[rollout] = settles_at

    async def scraped(
        self,
        source: EngineSeriesSource,
        rollout: str,
        namespace: str,
        pods: tuple[str, ...],
        now: datetime,
    ) -> frozenset[str] | None:
        """The pods among `pods` Prometheus holds series of (None: unknown): remembered
        once all were seen, or while the last answer is under `RECHECK_SECONDS` old; else
        asked now, once."""
        answer = self._answers.get(rollout)
        fresh = answer is not None and (answer.complete or now - answer.at < RECHECK)
        if answer is not None and answer.pods == pods and fresh:
            return answer.scraped
        result = await source.pods_with_series(namespace, pods)
        scraped = None if isinstance(result, MetricError) else result
        self._answers[rollout] = _Answer(pods, scraped, now)
        return scraped

    def forget(self, rollout: str) -> None:
        """Drop a rollout's answers (deleted, or no engine pod left to check)."""
        self._answers.pop(rollout, None)
        self._settles_at.pop(rollout, None)
