"""pytest fixtures for tests that run the operator on the local cluster.

Loaded by tests/e2e/conftest.py (`pytest_plugins`). One operator process serves the whole
session (it watches every namespace, and each test has its own namespace); a test that
kills or restarts it gets it back running for the next test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from localcluster.handle import LocalCluster
from localcluster.operator_process import COMPONENT, OperatorProcess, install_crds
from localcluster.process import is_alive, read_pid, stop_processes
from localcluster.rollouts import Rollout


@pytest.fixture(scope="session")
def operator(cluster: LocalCluster) -> Iterator[OperatorProcess]:
    """The CRD installed and one operator running (reconciling every second).

    An operator left running by `make demo` watches every namespace too; two operators
    would fight over the tests' rollouts, so it is stopped first.
    """
    leftover = read_pid(cluster.paths, COMPONENT)
    if leftover is not None and is_alive(leftover):
        stop_processes([leftover])
    install_crds(cluster)
    process = OperatorProcess(cluster, reconcile_interval=1.0).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def running_operator(operator: OperatorProcess) -> Iterator[OperatorProcess]:
    """The session operator, restarted first if an earlier test killed it."""
    if operator.child is None or operator.child.poll() is not None:
        operator.start()
    yield operator
    operator.assert_running()


@pytest.fixture
def rollout(
    cluster: LocalCluster, namespace: str, running_operator: OperatorProcess
) -> Callable[[str], Rollout]:
    """A factory of Rollout handles in the test's namespace."""

    def make(name: str = "llama") -> Rollout:
        return Rollout(cluster, namespace, name)

    return make
