"""The drift guard's memory is a cache: a restart re-reads the latest look, judges it the same.

`runtime.guard_reads` (issue 35 item 2) only saves requests: a reconcile between looks asks
Prometheus nothing. A restarted operator has none of it; it reads the latest look once more,
evaluated at that look's own instant (the same window, the same blocks), so the guard
decides the same status and the same Events: nothing new is written or announced. Whether a
look is judged is not a decision kept anywhere: the grid (`status.phaseSince`, the spec's
interval) says which look is due.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from controller_fakes import EAGLE3, FakeClock, FakeCluster, FakeKube, make_runtime, raw_spec
from kubernetes.client import ApiException
from restart_world import echo_writes

from specdecode.adapters.metrics import EngineSelector
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import Phase, SpecDecodeRolloutSpec
from specdecode.domain.drift import AcceptanceBlock, ProductionAcceptance
from specdecode.domain.observations import Observations
from specdecode.domain.phases import guard_step
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.transitions import Step
from specdecode.reconciler.apply import RolloutRef
from specdecode.reconciler.guard import observe_production
from specdecode.reconciler.guard_boundary import guard_plan_of
from specdecode.reconciler.reconcile import RolloutRead, StaleRollout, reconcile
from specdecode.reconciler.rollout_boundary import settings_of
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.status_boundary import status_of

pytestmark = pytest.mark.unit

REF = RolloutRef("team-a", "llama-8b", "uid-1", 1, "7")


class Blocks:
    """Production's counters: acceptance far below the default threshold (a drift)."""

    def __init__(self) -> None:
        self.asked: list[tuple[datetime, datetime]] = []

    async def acceptance_blocks(
        self, engine: EngineSelector, start: datetime, end: datetime, block_seconds: int
    ) -> tuple[AcceptanceBlock, ...]:
        self.asked.append((start, end))
        whole = int((end - start).total_seconds()) // block_seconds
        return tuple(
            AcceptanceBlock(draft_tokens=3000.0, accepted_tokens=300.0) for _ in range(whole)
        )


def promoted(now: datetime) -> RolloutState:
    return RolloutState(
        phase=Phase.PROMOTED,
        phase_since=now - timedelta(seconds=3600),
        stable_speculative=setting_of(EAGLE3),
        stable_fingerprint=EAGLE3.fingerprint(),
        candidate_speculative=setting_of(EAGLE3),
        candidate_fingerprint=EAGLE3.fingerprint(),
    )


def guard(
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    observed: ProductionAcceptance | None,
    now: datetime,
) -> Step:
    """The guard's step on production's look `observed`, as the Promoted phase takes it."""
    seen = Observations(1, production_acceptance=observed, guard=guard_plan_of(spec))
    return guard_step(settings_of(spec, status.candidate_speculative), status, seen, now)


def fresh_runtime(clock: FakeClock, blocks: Blocks) -> Runtime:
    runtime = make_runtime(FakeKube(), FakeCluster(), clock)
    runtime.acceptance_blocks = blocks
    return runtime


async def test_a_restart_reads_the_latest_look_again_and_decides_the_same() -> None:
    clock, blocks = FakeClock(), Blocks()
    spec = SpecDecodeRolloutSpec.model_validate(raw_spec(EAGLE3))
    status = promoted(clock.now())
    runtime = fresh_runtime(clock, blocks)
    now = clock.now()

    first, _ = await observe_production(runtime, REF, spec, status, now)
    assert isinstance(first, ProductionAcceptance) and len(blocks.asked) == 1
    runtime.guard_reads.judged[REF.key] = first.look_at  # as the apply marks it once written
    again, _ = await observe_production(runtime, REF, spec, status, now)
    assert again is None and len(blocks.asked) == 1  # between looks: nothing asked

    restarted = fresh_runtime(clock, blocks)  # a new process: nothing in memory
    reread, _ = await observe_production(restarted, REF, spec, status, now)
    assert len(blocks.asked) == 2 and blocks.asked[0] == blocks.asked[1]  # the same window
    assert reread == first
    before: Any = guard(spec, status, first, now)
    after: Any = guard(spec, status, reread, now)
    assert before.status.drift is not None, "the scripted counters drift"
    assert (after.status, after.events) == (before.status, before.events)
    # Written once: the status the first decision wrote does not drift again, no Event.
    written = before.status
    repeat: Any = guard(spec, written, reread, now)
    assert repeat.status == written and repeat.events == ()


async def test_a_look_whose_status_write_is_refused_is_read_again() -> None:
    """The look is judged once its status is written: a write refused as stale (409) leaves
    it to the next reconcile, which reads it again; written, it is not read again."""
    clock, blocks = FakeClock(), Blocks()
    kube = FakeKube()
    runtime = make_runtime(kube, FakeCluster(), clock)
    runtime.acceptance_blocks = blocks
    raw_status = status_of(promoted(clock.now())).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    kube.current_version = "8"  # the rollout changed after the copy at 7 was read
    with pytest.raises(StaleRollout):
        await reconcile(runtime, RolloutRead(REF, raw_spec(EAGLE3), raw_status, {}))
    assert len(blocks.asked) == 1 and kube.status is None
    assert REF.key not in runtime.guard_reads.judged  # refused: not judged
    fresh = RolloutRef(REF.namespace, REF.name, REF.uid, 1, "8")
    await reconcile(runtime, RolloutRead(fresh, raw_spec(EAGLE3), raw_status, {}))
    assert len(blocks.asked) == 2 and blocks.asked[0] == blocks.asked[1]  # the same look
    assert kube.status is not None  # written this time: the look is judged
    assert runtime.guard_reads.judged[REF.key] == blocks.asked[1][1]
    written = RolloutRef(REF.namespace, REF.name, REF.uid, 1, kube.current_version or "")
    await reconcile(runtime, RolloutRead(written, raw_spec(EAGLE3), kube.status, {}))
    assert len(blocks.asked) == 2  # the same look is not read a third time


async def test_a_look_whose_status_is_written_stays_judged_when_a_child_write_fails() -> None:
    """Written, the look is judged even if a child's apply then fails (a 5xx, a webhook's
    422): otherwise every reconcile while the apply keeps failing would read it again."""
    clock, blocks = FakeClock(), Blocks()
    kube = FakeKube()
    runtime = make_runtime(kube, FakeCluster(), clock)
    runtime.acceptance_blocks = blocks
    raw_status = status_of(promoted(clock.now())).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ApiException(status=500, reason="apply refused")

    kube.server_side_apply = refuse  # type: ignore[method-assign]
    with pytest.raises(ApiException):
        await reconcile(runtime, RolloutRead(REF, raw_spec(EAGLE3), raw_status, {}))
    assert kube.status is not None and len(blocks.asked) == 1
    assert runtime.guard_reads.judged[REF.key] == blocks.asked[0][1]


class DriftingBlocks(Blocks):
    """Production's counters: on target for the first 15 minutes after the promotion,
    then far below it (a drift that the guard's later looks find)."""

    def __init__(self, promoted_at: datetime) -> None:
        super().__init__()
        self.drifts_from = promoted_at + timedelta(seconds=900)

    async def acceptance_blocks(
        self, engine: EngineSelector, start: datetime, end: datetime, block_seconds: int
    ) -> tuple[AcceptanceBlock, ...]:
        self.asked.append((start, end))
        blocks = []
        for index in range(int((end - start).total_seconds()) // block_seconds):
            at = start + timedelta(seconds=(index + 1) * block_seconds)
            accepted = 300.0 if at > self.drifts_from else 2400.0
            blocks.append(AcceptanceBlock(draft_tokens=3000.0, accepted_tokens=accepted))
        return tuple(blocks)


async def _guard_for_an_hour(restart: bool) -> tuple[list[Any], list[str], int]:
    """A Promoted rollout reconciled every 100 s for an hour (looks every 300 s), by one
    process or by a fresh one at every reconcile: the statuses written, the Events, and
    how many looks were read from Prometheus."""
    clock, kube, cluster = FakeClock(), FakeKube(), FakeCluster()
    promoted_at = clock.now() - timedelta(seconds=600)
    blocks = DriftingBlocks(promoted_at)
    status: Any = promoted(clock.now()).model_copy(update={"phase_since": promoted_at})
    raw_status = status_of(status).model_dump(mode="json", by_alias=True, exclude_none=True)
    kube.current_version = "7"
    kube.status = raw_status
    runtime = make_runtime(kube, cluster, clock)
    statuses = []
    for _ in range(36):
        if restart:
            runtime = make_runtime(kube, cluster, clock)
        runtime.acceptance_blocks = blocks
        ref = RolloutRef(REF.namespace, REF.name, REF.uid, 1, kube.current_version or "")
        sent = len(kube.calls)
        await reconcile(runtime, RolloutRead(ref, raw_spec(EAGLE3), kube.status, {}))
        echo_writes(kube, cluster, sent)  # production, as the watch then shows it
        statuses.append(kube.status)
        clock.advance(100)
    return statuses, kube.event_reasons(), len(blocks.asked)


async def test_a_restart_at_every_reconcile_of_a_guarded_rollout_changes_nothing() -> None:
    """Through `reconcile`: the guard's looks, read again by a process restarted at every
    reconcile (`GuardReads` is empty each time), write the same statuses and post the same
    Events, once; only Prometheus is asked more. What decides lives in status: the look a
    process already judged is judged again at its own instant to the same status."""
    kept, kept_events, kept_reads = await _guard_for_an_hour(False)
    restarted, restarted_events, restarted_reads = await _guard_for_an_hour(True)
    assert any((s.get("drift") or {}) for s in kept), "the scripted counters drift"
    assert len({repr(s) for s in kept}) >= 3  # the looks changed status on the way
    assert restarted == kept
    assert restarted_events == kept_events and len(set(kept_events)) == len(kept_events)
    assert kept_events == ["Drifted"]  # announced once, by whichever process judged it
    assert kept_reads == 12  # one read per look (an hour of looks 300 s apart)
    assert restarted_reads == 36  # a restarted process reads the latest look again
