"""How the e2e suite spreads over two pytest-xdist workers, each with a cluster of its own.

Why: most of the e2e suite's 52 minutes is waiting on real-time analyses, so two workers
nearly halve it. `make test` runs the e2e suite in two phases (the Makefile's E2E_PHASES):
every test not marked ``cpu_exclusive`` on two workers, then the ``cpu_exclusive`` ones
(CPU-bound timing, real vLLM) serially, alone on the machine. Each group below (a
module, or modules that share one) runs whole on one worker (xdist_groups.py), so a
module-scoped fixture (an analysis window several tests assert on) is set up once. Groups
are handed out longest first (planned seconds, from the CI log's durations;
tests/e2e/conftest.py sorts them so): the long waits start early, short tests fill the gaps.

The real vLLM modules are one group, and an exclusive one: real vLLM engines take both
cores of this machine, and a simulated analysis beside them would see its load clients
starved (a look then rightly says Inconclusive). `make test` leaves them to its second
phase; a direct xdist run over them still runs the group last, holding a lock
(``_machine_share`` in tests/e2e/conftest.py) that every other module shares: it starts
when the other worker's last module is done, and runs alone, as in a serial run.

``python -m localcluster.workers`` prints the plan: which worker gets which group, and
each worker's planned finish.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

# Modules that run on one worker, one after the other (module name -> group).
SHARED_GROUPS: Mapping[str, str] = {
    # Real vLLM on CPU: each engine pair takes both cores; two at once starve each other.
    "test_real_vllm": "real-vllm",
    "test_engine_contract": "real-vllm",
}
# Groups that run alone: last, while the other worker idles (see the module docstring).
EXCLUSIVE_GROUPS = frozenset({"real-vllm"})
# Added to every e2e test's time limit under xdist: an exclusive group's first test waits,
# in its setup, for the other worker's module to end (by plan a short one; a slow A/A gate
# pair can hold its worker ~10 minutes), and a module queued on the other worker may wait
# for a whole exclusive group (flock favours neither).
EXCLUSIVE_WAIT_SECONDS = 900
# The lock file they take, next to the workers' cluster directories (one per checkout).
SHARE_LOCK_NAME = ".cluster-gw.lock"
# Planned seconds per group: measured in CI (`--durations`, serial run of 2026-11-29), the
# tests below the 25 slowest estimated at ~7 s each; test_gates, test_mirror, test_chart and
# the groups below them without their cpu_exclusive tests (make test's second phase; the
# mirror and chart figures from a two-worker rehearsal of 2026-11-30). Only the order
# depends on them.
PLANNED_SECONDS: Mapping[str, float] = {
    "real-vllm": 220 + 172 + 56 + 54 + 38 + 3 * 7,
    "test_verdicts": 558 + 3 * 7,
    "test_tuning_trials": 240,
    "test_mirror": 128 + 55 + 47 + 42 + 2 * 7,
    "test_chart": 20 + 4 * 7,
    "test_vllm_versions": 176 + 2 * 7,
    "test_drift_guard": 176,
    "test_rollout_lifecycle": 61 + 25 + 24 + 8 * 7,
    "test_controller": 52 + 32 + 29 + 4 * 7,
    "test_instrument": 71,
    "test_adoption": 35 + 2 * 7,
    "test_gates": 37 + 7,
    "test_invalid_input": 23 + 3 * 7,
    "test_agent": 6 * 7,
    "test_cluster": 6 * 7,
    "test_cluster_lifecycle": 3 * 7,
    "test_gateway": 2 * 7,
    "test_cluster_pod_network": 2 * 7,
    "test_simulator": 7,
}
UNPLANNED_SECONDS = 60.0  # a new module: assumed longish, so it starts early


def group_of(module_name: str) -> str:
    """The planning group of a test module (its own name unless it shares one)."""
    short = module_name.rsplit(".", 1)[-1]
    return SHARED_GROUPS.get(short, short)


def planned_seconds(group: str) -> float:
    """How long a group is expected to take (for the order only)."""
    return PLANNED_SECONDS.get(group, UNPLANNED_SECONDS)


def is_exclusive(group: str) -> bool:
    """Whether the group must run with nothing on the other worker."""
    return group in EXCLUSIVE_GROUPS


def longest_first(groups: Iterable[str]) -> list[str]:
    """Distinct groups, longest planned first, the exclusive ones last (ties by name, so
    every worker sorts alike)."""
    return sorted(
        set(groups), key=lambda group: (is_exclusive(group), -planned_seconds(group), group)
    )


def plan(groups: Iterable[str], workers: int = 2) -> list[tuple[float, list[str]]]:
    """What xdist's loadscope does with the groups in `longest_first` order: each group goes
    to the worker that is free first; an exclusive group starts when every worker is free.
    Returns (planned finish in seconds, groups) per worker."""
    queue = [(0.0, index) for index in range(workers)]
    assigned: list[list[str]] = [[] for _ in range(workers)]
    for group in longest_first(groups):
        busy_until, index = heapq.heappop(queue)
        if is_exclusive(group):
            busy_until = max([busy_until, *(finish for finish, _ in queue)])
        assigned[index].append(group)
        heapq.heappush(queue, (busy_until + planned_seconds(group), index))
    finish = dict((index, seconds) for seconds, index in queue)
    return [(finish[index], assigned[index]) for index in range(workers)]


def main() -> None:
    """Print the planned groups and finish of each worker, and the serial sum."""
    groups = {group_of(module) for module in PLANNED_SECONDS} | set(PLANNED_SECONDS)
    for index, (seconds, assigned) in enumerate(plan(groups)):
        print(f"gw{index}: done at {seconds:5.0f} s  {', '.join(assigned)}")
    print(f"serial: {sum(planned_seconds(group) for group in groups):5.0f} s")


if __name__ == "__main__":
    main()
