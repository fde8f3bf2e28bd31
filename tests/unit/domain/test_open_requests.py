"""Requests in flight at a look: a stall of its age for the tail gate once past the stall
bound, a failed request for ErrorRate once past the request timeout or silent past the
silence bound (`test_silence_bound.py` simulates it), never counted twice.

Units of independence: the time block for the tail gate (an open gap joins the window's
newest block, like any gap arriving then), the request for ErrorRate (each request past the
timeout is one failed request). Each verdict test has its control: the same window without
the snapshot (what the operator judged before) gives the other verdict.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from domain_fixtures import T0, blocked_samples, stage_obs
from gate_looks import evaluate_gate

from specdecode.api import GateSpec, GateType, GateVerdict
from specdecode.domain.gates import LookPlan
from specdecode.domain.in_flight import MAX_OPEN, InFlight, OpenRequest
from specdecode.domain.observations import LatencySamples
from specdecode.domain.open_requests import (
    SILENCE_FLOOR_SECONDS,
    SILENCE_MULTIPLE,
    failed_in_flight,
    silence_bound,
    stall_bound,
    with_open_stalls,
)
from specdecode.vocabulary import ItlDefinition

pytestmark = pytest.mark.unit

LOOK = LookPlan(measured_seconds=300, max_seconds=600)
TAIL = GateSpec(name="p99-itl", type=GateType.TAIL_LATENCY)  # P99 chunk gap, 1.4x
ERRORS = GateSpec(name="errors", type=GateType.ERROR_RATE, max_error_rate=0.1)
TIMEOUT = 45.0


def _hung(n: int, open_gap: float, age: float | None = None) -> InFlight:
    return InFlight.of([OpenRequest(age or open_gap + 1.0, open_gap)] * n, TIMEOUT)


def _with_snapshot(samples: LatencySamples, snapshot: InFlight | None) -> LatencySamples:
    newest = dataclasses.replace(samples.blocks[-1], in_flight=snapshot)
    return dataclasses.replace(samples, blocks=(*samples.blocks[:-1], newest))


def _gaps(seed: int, spikes: int = 0) -> list[float]:
    """6,000 chunk gaps around 80 ms (60 blocks of 100), the first `spikes` of them (one per
    block, dealt round-robin) 0.4-0.6 s stalls."""
    rng = random.Random(seed)
    gaps = [0.08 * rng.lognormvariate(0.0, 0.1) for _ in range(6000)]
    for i in range(spikes):
        gaps[i] = rng.uniform(0.4, 0.6)
    return gaps


def _tail(baseline: LatencySamples, candidate: LatencySamples) -> tuple[str, str]:
    result = evaluate_gate(
        TAIL, stage_obs("s", baseline=baseline, candidate=candidate), None, T0, LOOK
    )
    return result.verdict, result.reason


def test_hung_requests_over_the_stall_bound_count_in_the_tail() -> None:
    # Both sides alike: the candidate passes on its ended gaps. 64 requests in flight (two
    # shards of 32 streams) have been silent for 10 s: each is a gap of at least 10 s, over
    # 1 % of the window's 6,064 gaps, so the P99 is one of them and no pass is possible.
    baseline, candidate = blocked_samples(_gaps(1)), blocked_samples(_gaps(2))
    assert _tail(baseline, candidate)[0] is GateVerdict.SUCCESSFUL  # the old operator's view
    verdict, reason = _tail(baseline, _with_snapshot(candidate, _hung(64, 10.0)))
    print(reason)
    # (Inconclusive, not Failed: the 64 lie in one block, and a tail verdict needs 30)
    assert verdict is GateVerdict.INCONCLUSIVE and "0 blocks with tail samples" in reason
    assert "64 / 0 requests in flight stalled over 141 ms" in reason
    # an older pod that cannot say (None) is judged as before: unknown, not bad news
    assert _tail(baseline, _with_snapshot(candidate, None))[0] is GateVerdict.SUCCESSFUL
    # 20 hung (0.33 %) already hold a third of the tail's weight in one block: too few
    # blocks carry the rest for a verdict (no pass); 10 move the P99 within the ended gaps
    some = _tail(baseline, _with_snapshot(candidate, _hung(20, 10.0)))
    assert some[0] is GateVerdict.INCONCLUSIVE and "26 blocks with tail samples" in some[1]
    few = _tail(baseline, _with_snapshot(candidate, _hung(10, 10.0)))
    assert few[0] is GateVerdict.SUCCESSFUL and "10 / 0 requests in flight" in few[1]


def test_open_gaps_under_the_stall_bound_add_nothing() -> None:
    # 32 requests 50 ms into their gaps: far short of the gaps they will be, so counting
    # them would pull the quantile down; under the bound they are left out.
    baseline = blocked_samples(_gaps(1))
    bound = stall_bound(baseline, ItlDefinition.PER_CHUNK, 0.99, 0.4)
    assert bound is not None and 0.12 < bound < 0.16  # 1.4 x the baseline's ~100 ms P99
    candidate = _with_snapshot(blocked_samples(_gaps(2)), _hung(32, 0.05))
    same, added = with_open_stalls(candidate, bound)
    assert added == 0 and same is candidate
    stalled, added = with_open_stalls(_with_snapshot(candidate, _hung(3, 0.2)), bound)
    assert added == 3 and stalled.total.stalls == 3
    assert stalled.per_chunk_itl.total == candidate.per_chunk_itl.total + 3
    assert stalled.blocks[-1].per_chunk_itl.total == candidate.blocks[-1].per_chunk_itl.total + 3
    # no baseline gap yet: no bound, nothing added
    assert stall_bound(LatencySamples(shards=1), ItlDefinition.PER_CHUNK, 0.99, 0.4) is None


def test_requests_past_the_request_timeout_are_failed_requests() -> None:
    # 150 requests each side ended fine; 30 more of the candidate are in flight past the
    # 45 s timeout (its pod stopped before its timer ran): 30 of 180 failed.
    baseline = blocked_samples(requests_ok=150)
    candidate = blocked_samples(requests_ok=150)
    stuck = _with_snapshot(candidate, _hung(30, 50.0, age=50.0))
    assert failed_in_flight(stuck) == 30
    seen = stage_obs("s", baseline=baseline, candidate=stuck)
    result = evaluate_gate(ERRORS, seen, None, T0, LOOK)
    assert result.verdict is GateVerdict.FAILED, result.reason
    assert "over 180 / 150 requests" in result.reason
    # control: without the snapshot the 150 clean requests pass
    clean = evaluate_gate(
        ERRORS, stage_obs("s", baseline=baseline, candidate=candidate), None, T0, LOOK
    )
    assert clean.verdict is GateVerdict.SUCCESSFUL, clean.reason
    # in flight but younger than the timeout: not (yet) a failure
    young = _with_snapshot(candidate, _hung(30, 40.0, age=44.0))
    assert failed_in_flight(young) == 0  # (no silence bound given)


def test_only_the_newest_blocks_snapshot_counts() -> None:
    # A request listed at an older block's end has since ended (its end is in a later
    # block) or is listed again in the newest: counting older snapshots would count twice.
    samples = blocked_samples(_gaps(2))
    old = dataclasses.replace(samples.blocks[0], in_flight=_hung(30, 50.0, age=50.0))
    earlier = dataclasses.replace(samples, blocks=(old, *samples.blocks[1:]))
    assert earlier.in_flight is None and failed_in_flight(earlier) == 0
    assert with_open_stalls(earlier, 0.1)[1] == 0
    newest = _with_snapshot(earlier, _hung(2, 50.0, age=50.0))
    assert newest.in_flight is not None and failed_in_flight(newest) == 2


def test_a_snapshot_is_bounded_and_keeps_the_longest_open_gaps() -> None:
    many = InFlight.of([OpenRequest(1.0 + i, i / 10) for i in range(500)], TIMEOUT)
    assert many.count == 500 and len(many.longest) == MAX_OPEN
    assert min(r.open_gap for r in many.longest) == pytest.approx((500 - MAX_OPEN) / 10)
    both = many.plus(InFlight.of([OpenRequest(100.0, 99.0)], 30.0))
    assert both.count == 501 and both.longest[0].open_gap == 99.0 and both.timeout == 30.0
    assert len(both.longest) == MAX_OPEN
    over = both.open_gaps_over(49.0)  # 99.0, then 49.9 down to 49.1
    assert len(over) == 10 and over[0] == 99.0


def test_streams_silent_past_the_silence_bound_are_failed_requests_on_both_sides() -> None:
    # The baseline's gaps (~80 ms, P99.9 under 0.2 s): the bound is the 5 s floor. 40 of
    # the candidate's requests in flight have sent nothing for 6 s (16 of them nothing at
    # all: a late start, open gap = age), none near the 45 s timeout: failed now.
    baseline = blocked_samples(_gaps(1), requests_ok=150)
    assert silence_bound(baseline) == SILENCE_FLOOR_SECONDS
    silent = InFlight.of([OpenRequest(9.0, 6.0)] * 24 + [OpenRequest(6.0, 6.0)] * 16, TIMEOUT)
    candidate = _with_snapshot(blocked_samples(_gaps(2), requests_ok=150), silent)
    assert failed_in_flight(candidate, SILENCE_FLOOR_SECONDS) == 40
    assert failed_in_flight(candidate) == 0  # the old rule: not before the timeout
    result = evaluate_gate(
        ERRORS, stage_obs("s", baseline=baseline, candidate=candidate), None, T0, LOOK
    )
    assert result.verdict is GateVerdict.FAILED, result.reason
    assert "over 190 / 150 requests" in result.reason
    assert "silent over 5.0 s or past the timeout: 40 / 0" in result.reason
    # paired: the baseline's own silent requests count as its failures under the same bound
    # (4 each side: the same shares, a difference of nothing)
    four = InFlight.of([OpenRequest(9.0, 6.0)] * 4, TIMEOUT)
    seen = stage_obs(
        "s", baseline=_with_snapshot(baseline, four), candidate=_with_snapshot(candidate, four)
    )
    paired = evaluate_gate(ERRORS, seen, None, T0, LOOK)
    assert "- baseline 0.0260 = 0.0000" in paired.reason and "4 / 4" in paired.reason
    # silent for less than the bound: streaming slowly, not failed
    slow = _with_snapshot(candidate, InFlight.of([OpenRequest(9.0, 4.9)] * 20, TIMEOUT))
    assert failed_in_flight(slow, SILENCE_FLOOR_SECONDS) == 0


def test_the_silence_bound_follows_a_slow_baseline_not_its_few_failures() -> None:
    # 4 x the baseline's P99.9 wait where that is over the floor (slow 2 s steps) ...
    slow = blocked_samples([2.0] * 6000)
    assert silence_bound(slow) == pytest.approx(SILENCE_MULTIPLE * 2.0, rel=0.01)
    # ... but three 45 s last waits of its own timed-out requests (0.05 %) do not lift it
    timed_out = blocked_samples(_gaps(1)[:-3] + [45.0] * 3)
    assert silence_bound(timed_out) == SILENCE_FLOOR_SECONDS
    # no baseline gap and no first token yet: no bound (only the timeout counts)
    assert silence_bound(LatencySamples(shards=1)) is None and silence_bound(None) is None
