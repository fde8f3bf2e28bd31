"""Request order: identical on both sides, every index once over shards and workers."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from specdecode_load.schedule import (
    MAX_ARRIVAL_LAG_SECONDS,
    WorkerSchedule,
    next_arrival,
    prompt_choice,
    split_concurrency,
    worker_schedules,
)

pytestmark = pytest.mark.unit


def drain(schedule: WorkerSchedule, limit: int) -> list[int]:
    out: list[int] = []
    while len(out) < limit and (index := schedule.next_index()) is not None:
        out.append(index)
    return out


@pytest.mark.parametrize(("shards", "workers"), [(1, 1), (1, 3), (4, 1), (3, 2)])
def test_shards_and_workers_cover_every_index_once(shards: int, workers: int) -> None:
    seen: list[int] = []
    for shard in range(shards):
        for schedule in worker_schedules(shard, shards, workers, None, None):
            seen.extend(drain(schedule, 50))
    assert sorted(seen) == list(range(50 * shards * workers))


def test_both_sides_build_the_same_requests() -> None:
    """A side is only its flags: the same flags give the same index -> prompt mapping."""
    baseline = [drain(s, 20) for s in worker_schedules(1, 2, 2, None, None)]
    candidate = [drain(s, 20) for s in worker_schedules(1, 2, 2, None, None)]
    assert baseline == candidate
    choices = [prompt_choice(7, i, 256) for i in range(2000)]
    assert choices == [prompt_choice(7, i, 256) for i in range(2000)]
    assert len(set(choices)) > 200  # spread over the prompt set, not stuck
    assert choices != [prompt_choice(8, i, 256) for i in range(2000)]  # the seed matters


def test_caps_split_over_workers_and_stop_sending() -> None:
    schedules = worker_schedules(0, 1, 3, max_requests=10, max_output_tokens=None)
    assert [s.max_requests for s in schedules] == [4, 3, 3]
    assert sum(len(drain(s, 100)) for s in schedules) == 10
    assert all(s.cap_reached for s in schedules)
    tokens = worker_schedules(0, 1, 2, max_requests=None, max_output_tokens=100)[0]
    assert tokens.next_index() is not None
    tokens.add_output_tokens(50)
    assert tokens.cap_reached and tokens.next_index() is None


def test_a_restart_continues_the_budget() -> None:
    schedules = worker_schedules(0, 1, 2, 10, 1000, already_sent=6, already_output_tokens=900)
    assert [s.max_requests for s in schedules] == [2, 2]
    assert [s.max_output_tokens for s in schedules] == [50, 50]
    assert schedules[0].next_index() == 2 * 3  # continues after the first boot's positions
    spent = worker_schedules(0, 1, 2, 10, None, already_sent=10)
    assert all(s.cap_reached for s in spent)


def test_concurrency_split() -> None:
    assert split_concurrency(5, 2) == [3, 2]
    assert split_concurrency(1, 3) == [1, 0, 0]


def counted_gaps(seconds: float) -> tuple[list[int], Callable[[], float]]:
    calls = [0]

    def gap() -> float:
        calls[0] += 1
        return seconds

    return calls, gap


def test_a_sender_on_time_draws_one_gap_and_skips_nothing() -> None:
    calls, gap = counted_gaps(0.25)
    assert next_arrival(10.0, 10.5, gap) == (10.25, 0)
    # behind, but by less than the allowed lag: the arrival is still sent (late)
    assert next_arrival(10.0, 10.0 + MAX_ARRIVAL_LAG_SECONDS, gap) == (10.25, 0)
    assert calls == [2]  # one draw each: both sides' schedules stay identical


def test_a_sender_far_behind_skips_and_counts_every_arrival_it_drops() -> None:
    calls, gap = counted_gaps(0.25)
    # 3 s late: arrivals at 0.25 .. 1.75 are over a second old and dropped; 2.0 is sent
    assert next_arrival(0.0, 3.0, gap) == (2.0, 7)
    assert calls == [8]
