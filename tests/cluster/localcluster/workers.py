"""How the e2e suite spreads over two pytest-xdist workers, each with a cluster of its own.

Why: most of the e2e suite's 53 minutes is waiting on real-time analyses, so two workers
(``pytest -n 2 --dist loadgroup``, see the Makefile) nearly halve it. Each test module is
one xdist group, so a module-scoped fixture (an analysis window several tests assert on) is
set up once, on one worker. Modules that must not overlap share a group and so run one
after the other on one worker: the real vLLM engines (each saturates this 2-core machine).
Groups are handed out longest first (planned seconds, from the CI log's durations), so
the long waits start early and the short tests fill the gaps at the end.

``python -m localcluster.workers`` prints the plan: which worker gets which group, and
each worker's planned sum.
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
# Planned seconds per group: measured in CI (`--durations`, serial run of 2026-11-28),
# the tests below the 25 slowest estimated at ~8 s each. Only the order depends on them.
PLANNED_SECONDS: Mapping[str, float] = {
    "real-vllm": 258 + 187 + 43 + 41 + 61 + 3 * 8,
    "test_verdicts": 529 + 3 * 8,
    "test_gates": 154 + 150 + 35 + 20,
    "test_chart": 234 + 4 * 8,
    "test_tuning_trials": 243,
    "test_rollout_lifecycle": 61 + 25 + 24 + 22 + 7 * 8,
    "test_mirror": 125 + 36 + 2 * 8,
    "test_vllm_versions": 177 + 2 * 8,
    "test_drift_guard": 176,
    "test_controller": 53 + 32 + 32 + 4 * 8,
    "test_instrument": 76,
    "test_adoption": 35 + 2 * 8,
    "test_agent": 6 * 8,
    "test_cluster": 6 * 8,
    "test_invalid_input": 23 + 3 * 8,
    "test_cluster_lifecycle": 3 * 8,
    "test_gateway": 2 * 8,
    "test_cluster_pod_network": 2 * 8,
    "test_simulator": 8,
}
UNPLANNED_SECONDS = 60.0  # a new module: assumed longish, so it starts early


def group_of(module_name: str) -> str:
    """The xdist group of a test module (its own name unless it shares one)."""
    short = module_name.rsplit(".", 1)[-1]
    return SHARED_GROUPS.get(short, short)


def planned_seconds(group: str) -> float:
    """How long a group is expected to take (for the order only)."""
    return PLANNED_SECONDS.get(group, UNPLANNED_SECONDS)


def longest_first(groups: Iterable[str]) -> list[str]:
    """Distinct groups, longest planned first (ties by name, so every worker agrees)."""
    return sorted(set(groups), key=lambda group: (-planned_seconds(group), group))


def plan(groups: Iterable[str], workers: int = 2) -> list[tuple[float, list[str]]]:
    """What xdist's loadgroup does with the groups in `longest_first` order: each group goes
    to the worker that is free first. Returns (planned seconds, groups) per worker."""
    queue = [(0.0, index) for index in range(workers)]
    assigned: list[list[str]] = [[] for _ in range(workers)]
    for group in longest_first(groups):
        busy_until, index = heapq.heappop(queue)
        assigned[index].append(group)
        heapq.heappush(queue, (busy_until + planned_seconds(group), index))
    return [(sum(planned_seconds(g) for g in groups_), groups_) for groups_ in assigned]


def main() -> None:
    """Print the planned groups and sum of each worker."""
    groups = {group_of(module) for module in PLANNED_SECONDS} | set(PLANNED_SECONDS)
    for index, (seconds, assigned) in enumerate(plan(groups)):
        print(f"gw{index}: {seconds:5.0f} s  {', '.join(assigned)}")


if __name__ == "__main__":
    main()
