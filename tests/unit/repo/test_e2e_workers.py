"""The e2e suite on two pytest-xdist workers: each worker's own cluster, and the plan.

Two workers on one state directory would share its etcd, ports, pod network and operator;
two real vLLM modules on different workers would run side by side and starve each other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from localcluster import workers
from localcluster.paths import REPO_ROOT, STATE_DIR_ENV, ClusterPaths
from localcluster.podnetwork import PodNetworkPlan
from localcluster.xdist_groups import GroupScheduling, scope_of

pytestmark = pytest.mark.unit

E2E_DIR = REPO_ROOT / "tests" / "e2e"


def e2e_modules() -> list[Path]:
    return sorted(E2E_DIR.glob("test_*.py"))


def test_without_xdist_the_cluster_is_the_default_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STATE_DIR_ENV, raising=False)
    assert ClusterPaths.for_worker(None) == ClusterPaths.default()
    assert ClusterPaths.for_worker(None).state_dir == REPO_ROOT / ".cluster"


def test_each_worker_has_its_own_state_dir_and_pod_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(STATE_DIR_ENV, raising=False)
    gw0, gw1 = ClusterPaths.for_worker("gw0"), ClusterPaths.for_worker("gw1")
    assert gw0.state_dir == REPO_ROOT / ".cluster-gw0"
    assert gw1.state_dir == REPO_ROOT / ".cluster-gw1"
    plans = [PodNetworkPlan.for_state_dir(p.state_dir) for p in (ClusterPaths.default(), gw0, gw1)]
    assert len({plan.netns for plan in plans}) == 3
    assert len({plan.host_device for plan in plans}) == 3


def test_a_moved_cluster_dir_moves_the_workers_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "ci-cluster"))
    assert ClusterPaths.for_worker("gw1").state_dir == tmp_path / "ci-cluster-gw1"


def test_every_module_that_starts_real_vllm_shares_one_group() -> None:
    """Real vLLM takes both cores: its modules must run one after the other, on one worker."""
    real = [path.stem for path in e2e_modules() if "realvllm" in path.read_text()]
    assert len(real) >= 2, real
    assert {workers.group_of(module) for module in real} == {"real-vllm"}


def test_every_module_that_starts_real_vllm_runs_in_the_exclusive_phase() -> None:
    """`make test` runs the cpu_exclusive tests after the others, alone on the machine; a real
    vLLM module left out of that phase would share the cores with another worker's analysis."""
    real = [path for path in e2e_modules() if "realvllm" in path.read_text()]
    unmarked = [
        path.stem
        for path in real
        if not re.search(r"^pytestmark = \[.*pytest\.mark\.cpu_exclusive", path.read_text(), re.M)
    ]
    assert real and not unmarked, unmarked


def test_every_planned_group_is_a_module_or_a_shared_group() -> None:
    """A renamed or deleted module must not leave a stale duration behind."""
    known = {path.stem for path in e2e_modules()} | set(workers.SHARED_GROUPS.values())
    assert set(workers.PLANNED_SECONDS) <= known
    assert set(workers.SHARED_GROUPS) <= {path.stem for path in e2e_modules()}


def test_groups_go_longest_first_and_the_exclusive_ones_last() -> None:
    planned = dict(workers.PLANNED_SECONDS)
    order = workers.longest_first(planned)
    shared = [group for group in order if not workers.is_exclusive(group)]
    assert order[len(shared) :] == sorted(workers.EXCLUSIVE_GROUPS)
    assert [planned[group] for group in shared] == sorted(
        (planned[group] for group in shared), reverse=True
    )


def test_the_plan_runs_an_exclusive_group_alone_after_both_workers_are_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planned = {"long": 100.0, "short": 30.0, "alone": 50.0}
    monkeypatch.setattr(workers, "PLANNED_SECONDS", planned)
    monkeypatch.setattr(workers, "EXCLUSIVE_GROUPS", frozenset({"alone"}))
    # "alone" waits for "long" (100 s) even on the worker free at 30 s.
    assert workers.plan(planned) == [(100.0, ["long"]), (150.0, ["short", "alone"])]


def test_two_workers_plan_well_under_the_serial_sum() -> None:
    planned = dict(workers.PLANNED_SECONDS)
    per_worker = workers.plan(planned)
    assert sorted(group for _, groups in per_worker for group in groups) == sorted(planned)
    assert max(finish for finish, _ in per_worker) < 0.65 * sum(planned.values())


def test_a_new_module_is_planned_as_longish_not_last() -> None:
    assert workers.planned_seconds("test_brand_new") == workers.UNPLANNED_SECONDS
    assert workers.group_of("tests.e2e.test_engine_contract") == "real-vllm"
    assert workers.group_of("test_gates") == "test_gates"


def test_the_scheduler_keeps_each_group_whole() -> None:
    """loadscope's own scopes would split the real vLLM group over both workers (one module
    each), and one module's first test would wait in setup for the other's whole module."""
    scheduler = object.__new__(GroupScheduling)
    scopes = {
        scheduler._split_scope(nodeid)
        for nodeid in (
            "tests/e2e/test_real_vllm.py::test_a",
            "tests/e2e/test_engine_contract.py::test_b[x@y]",
        )
    }
    assert scopes == {"real-vllm"}
    assert scope_of("tests/e2e/test_gates.py::test_c[a::b]") == "test_gates"
