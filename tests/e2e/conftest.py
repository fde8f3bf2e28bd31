"""Fixtures for end-to-end tests on the local control plane (see tests/cluster/localcluster).

The cluster is shared by the whole session: started if ``.cluster/state.json`` says it is
not up (and then stopped at the end), reused otherwise, so a developer can keep
`make cluster-up` running between test runs. Under pytest-xdist (`make test`'s first phase:
two workers) each worker has a cluster of its own (``.cluster-gw0``, ``.cluster-gw1``: own
ports, pod network and operator) and each test module runs whole on one worker
(localcluster/workers.py). Tests marked ``cpu_exclusive`` (CPU-bound timing, real vLLM) run
in `make test`'s second phase, serially on ``.cluster``, alone on the machine.
If it cannot start, every e2e test ERRORs with the failing component's last log lines: a
broken cluster must never look like a skip.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from localcluster import workers
from localcluster.binaries import BuildFailed
from localcluster.handle import LocalCluster
from localcluster.paths import STATE_DIR_ENV, ClusterPaths
from localcluster.podnetwork import PodNetworkUnavailable
from localcluster.ports import PortTaken
from localcluster.process import ComponentFailed, tail_lines
from localcluster.shutdown import down, is_up
from localcluster.startup import up
from localcluster.waiting import wait_for

# Set to keep a cluster this session started running afterwards (for poking at it).
KEEP_CLUSTER_ENV = "SPECDECODE_KEEP_CLUSTER"
FAILURE_LOG_COMPONENTS = ("agent", "kube-scheduler", "kube-controller-manager")
FAILURE_LOG_LINES = 15
# Per-test limit (pytest-timeout; unit tests get pyproject's 300 s). Generous: the longest
# waits are ~8 minutes, and the first test also starts the cluster in its setup.
E2E_TIMEOUT_SECONDS = 900


def pytest_configure(config: pytest.Config) -> None:
    """On a pytest-xdist worker, point everything (fixtures, `ClusterPaths.default()`, child
    processes) at the worker's own cluster directory."""
    worker_id = _xdist_worker(config)
    if worker_id:
        os.environ[STATE_DIR_ENV] = str(ClusterPaths.for_worker(worker_id).state_dir)


def _xdist_worker(config: pytest.Config) -> str | None:
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every e2e test without its own `@pytest.mark.timeout` gets E2E_TIMEOUT_SECONDS (on
    xdist, plus the longest wait for the share lock: an exclusive group's module waits for
    the machine to itself, and a module queued on the other worker may wait, in its first
    test's setup, for a whole exclusive group: flock is not fair to either). On
    xdist workers the modules are ordered as localcluster/workers.py plans them (longest
    first, real vLLM last; localcluster/xdist_groups.py hands them out in this order); a
    run without xdist keeps the files' order."""
    worker_id = _xdist_worker(config)
    for item in items:
        if item.get_closest_marker("e2e") and item.get_closest_marker("timeout") is None:
            seconds = E2E_TIMEOUT_SECONDS
            if worker_id:
                seconds += workers.EXCLUSIVE_WAIT_SECONDS  # the lock's wait is in its setup
            item.add_marker(pytest.mark.timeout(seconds))
    if not worker_id:
        return
    # Only the e2e tests: the others keep their order, after them (localcluster/run_order.py
    # puts the long unit tests first, and a sort by module name here undid it).
    e2e = [item for item in items if item.get_closest_marker("e2e")]
    groups = {item.nodeid: workers.group_of(item.path.stem) for item in e2e}
    rank = {group: index for index, group in enumerate(workers.longest_first(groups.values()))}
    order = {item.nodeid: index for index, item in enumerate(e2e)}
    e2e.sort(key=lambda item: (rank[groups[item.nodeid]], order[item.nodeid]))
    items[:] = [*e2e, *(item for item in items if not item.get_closest_marker("e2e"))]


@pytest.fixture(scope="module", autouse=True)
def _machine_share(request: pytest.FixtureRequest) -> Iterator[None]:
    """On xdist workers: an exclusive group's module (real vLLM) runs alone, every other
    module shares the machine. A flock next to the workers' cluster directories, held for
    the whole module (its module-scoped analysis windows too); nothing without xdist."""
    if not _xdist_worker(request.config) or request.node.get_closest_marker("e2e") is None:
        yield
        return
    exclusive = workers.is_exclusive(workers.group_of(request.module.__name__))
    lock_file = ClusterPaths.default().state_dir.with_name(workers.SHARE_LOCK_NAME)
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    """The running local cluster (started here if needed, then stopped here too, unless
    ``SPECDECODE_KEEP_CLUSTER`` is set)."""
    paths = ClusterPaths.default()
    started_here = False
    if not is_up(paths):
        failure = ""
        try:
            _, started_here = up(paths)
        except (ComponentFailed, PortTaken, BuildFailed, PodNetworkUnavailable) as error:
            failure = str(error)
        if failure:  # outside `except`, so the report shows the log lines, not a traceback
            pytest.fail(f"the local cluster could not start:\n{failure}", pytrace=False)
    try:
        yield LocalCluster.attach(paths)
    finally:
        if started_here and not os.environ.get(KEEP_CLUSTER_ENV):
            down(paths)


@pytest.fixture(scope="session")
def kube_api(cluster: LocalCluster) -> Iterator[client.ApiClient]:
    """A kubernetes ApiClient authenticated as cluster admin."""
    api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(cluster.kubeconfig)
    )
    with api_client:
        yield api_client


@pytest.fixture(scope="session")
def prometheus_url(cluster: LocalCluster) -> str:
    """Base URL of the harness' Prometheus (scrapes annotated pods every second)."""
    return cluster.prometheus_url


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", test_name.lower().removeprefix("test_")).strip("-")
    return f"t-{slug[:40].rstrip('-')}-{secrets.token_hex(3)}"


@pytest.fixture
def namespace(request: pytest.FixtureRequest, kube_api: client.ApiClient) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (without waiting for it to go)."""
    yield from _fresh_namespace(kube_api, _namespace_name(request.node.name))


@pytest.fixture(scope="module")
def module_namespace(request: pytest.FixtureRequest, kube_api: client.ApiClient) -> Iterator[str]:
    """A fresh namespace shared by one module's tests: for analyses that run in one window
    and are asserted by several tests."""
    yield from _fresh_namespace(
        kube_api, _namespace_name(request.module.__name__.rsplit(".", 1)[-1])
    )


def _fresh_namespace(kube_api: client.ApiClient, name: str) -> Iterator[str]:
    core: Any = client.CoreV1Api(kube_api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    # Pods are rejected until the ServiceAccount controller made the "default" account.
    wait_for(
        lambda: core.read_namespaced_service_account("default", name),
        timeout=30,
        message=f"ServiceAccount {name}/default",
    )
    yield name
    try:
        core.delete_namespace(name, propagation_policy="Background")
    except ApiException as error:
        if error.status != 404:
            raise


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    """On an e2e failure, attach the last lines of the agent, scheduler and controller logs."""
    outcome: Any = yield
    report = outcome.get_result()
    requested = getattr(item, "fixturenames", ())
    if report.when != "call" or not report.failed or "cluster" not in requested:
        return
    logs_dir = ClusterPaths.default().logs_dir  # the worker's own under xdist
    for component in FAILURE_LOG_COMPONENTS:
        tail = tail_lines(logs_dir / f"{component}.log", FAILURE_LOG_LINES)
        if tail:
            report.sections.append((f"{component}.log (last lines)", tail))


# Operator fixtures (the CRD installed, one operator per session, Rollout handles).
from localcluster.pytest_operator import operator, rollout, running_operator  # noqa: E402

__all__ = ["operator", "rollout", "running_operator"]
