"""One reconcile's decision: all that observe saw in, the next status, Events and writes out.

`reconciler.observe` reads the cluster once into a `Seen`; `decide_pass` is a pure
function of it and the clock. It runs the state machine (`machine.decide`), then adds
what problems found outside it say over the phase (the route's splitter name, a vLLM
release mismatch, objects in the way, a source that cannot be judged, a refused Patch,
unscraped engines; Degraded keeps the first reason, so the order is the precedence) and
the next timed event. `reconciler.apply` then makes the writes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from specdecode.domain.apply_findings import (
    carry_findings,
    with_foreign_children,
    with_patch_conflict,
)
from specdecode.domain.cadence import next_timed_event
from specdecode.domain.decision import Decision
from specdecode.domain.degraded import degraded_said, degraded_true, with_degraded
from specdecode.domain.engine_metrics import METRICS_UNAVAILABLE, EnginePod, metrics_unavailable
from specdecode.domain.engine_version import VERSION_MISMATCH, RunningVersion, version_mismatch
from specdecode.domain.invalid import decide_invalid_spec
from specdecode.domain.machine import decide
from specdecode.domain.observations import Observations
from specdecode.domain.rollout_settings import RolloutSettings
from specdecode.domain.rollout_state import MirrorRecord, RolloutState
from specdecode.domain.source_spec import UNAVAILABLE, decide_unresolved


@dataclass(frozen=True)
class EngineScrape:
    """The scrape check's inputs: the shadow engine pods, which of them Prometheus holds
    series of (None: not known), the grace, and the instant it was asked at."""

    namespace: str
    pods: tuple[EnginePod, ...]
    scraped: frozenset[str] | None
    grace: timedelta
    at: datetime


@dataclass(frozen=True)
class Seen:
    """What one reconcile observed that its decision reads (the spec as the decision reads
    it is on the `observations`). Without them (a spec invalid, or not resolvable from the
    source `source_name`): `problem` says why."""

    status: RolloutState
    generation: int
    observations: Observations | None = None
    problem: str | None = None
    source_name: str | None = None
    splitter_service: str = ""
    running_versions: tuple[RunningVersion, ...] = ()
    engine_scrape: EngineScrape | None = None
    source_problem: str | None = None


def decide_pass(seen: Seen, now: datetime) -> Decision:
    """The decision of one reconcile on what it saw."""
    old = seen.status
    if seen.observations is None:
        problem = seen.problem or "the spec cannot be resolved"
        if seen.source_name is None:
            unreadable = decide_invalid_spec(old, problem, seen.generation, now)
        else:
            unreadable = decide_unresolved(old, seen.source_name, problem, seen.generation, now)
        return carry_findings(old, unreadable)
    settings = seen.observations.rollout_settings()
    decision = decide(old, seen.observations, now)
    decision = with_mirror_status(seen.splitter_service, settings, decision)
    expected = settings.vllm_version
    running = list(seen.running_versions)
    decision = decision.with_status(
        with_version_check(old, decision.status, expected, running, now)
    )
    # Objects holding a child's name first: they block the analysis, which the scrape
    # check's MetricsUnavailable (Degraded keeps the first reason) would otherwise hide.
    decision = with_foreign_children(old, carry_findings(old, decision), now)
    decision = with_source_problem(old, decision, seen.source_problem, now)
    decision = with_patch_conflict(old, decision, now)
    scrape = seen.engine_scrape
    if scrape is not None:
        checked = with_metrics_check(
            old, decision.status, scrape.namespace, scrape.pods, scrape.scraped, scrape.grace,
            scrape.at,
        )  # fmt: skip
        decision = decision.with_status(checked)
    observations = seen.observations
    plan, guard = observations.analysis_plan(), observations.guard_plan()
    wake_at = next_timed_event(plan, guard, decision.status, now)
    return replace(decision, wake_at=wake_at)


def with_mirror_status(
    splitter_service: str, settings: RolloutSettings, decision: Decision
) -> Decision:
    """`decision` with `status.mirror` naming the splitter's Service (`splitter_service`,
    "name:port") and the route we write (None unless Mirror through the splitter): the one
    name a user who mirrors themselves (an adopted Deployment's owner) needs, read from
    the rollout rather than guessed."""
    mirror = (
        MirrorRecord(splitter_service=splitter_service, http_route=settings.http_route)
        if settings.splitter_mirror
        else None
    )
    if decision.status.mirror == mirror:
        return decision
    return decision.with_status(decision.status.model_copy(update={"mirror": mirror}))


def with_source_problem(
    old: RolloutState, decision: Decision, problem: str | None, now: datetime
) -> Decision:
    """`decision`, Degraded=True while the source (`problem`: why) cannot be judged."""
    if problem is None:
        return decision
    message = f"{problem}; no shadow is rendered until it can be judged"
    return decision.with_status(with_degraded(old, decision.status, UNAVAILABLE, message, now))


def with_version_check(
    old: RolloutState,
    new: RolloutState,
    expected: str,
    running: list[RunningVersion],
    now: datetime,
) -> RolloutState:
    """`new` with Degraded=True (VllmVersionMismatch) while an engine runs another release
    (`engine_version`), unless Degraded is already True for a reason of the phase; the
    transition time is kept from `old` while the mismatch lasts (no flapping)."""
    message = version_mismatch(expected, running)
    if message is None:
        return new
    return with_degraded(old, new, VERSION_MISMATCH, message, now)


def with_metrics_check(
    old: RolloutState,
    new: RolloutState,
    namespace: str,
    pods: tuple[EnginePod, ...] | list[EnginePod],
    scraped: frozenset[str] | None,
    grace: timedelta,
    now: datetime,
) -> RolloutState:
    """`new` with Degraded=True (MetricsUnavailable) while a settled engine pod has no
    series (`engine_metrics.metrics_unavailable`); a Degraded already True is left as it is."""
    if degraded_true(new):
        return new
    said = degraded_said(old, METRICS_UNAVAILABLE)
    message = metrics_unavailable(said, namespace, pods, scraped, grace, now)
    return new if message is None else with_degraded(old, new, METRICS_UNAVAILABLE, message, now)
