"""The pod network pieces that need no root: names, reserved addresses, a missing netns, a
launch failure that must not crash a pod worker, a crashed worker that still completes the
pod's deletion, and the relay."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from localcluster.agent.backoff import BackoffPolicy
from localcluster.agent.config import AgentPaths
from localcluster.agent.container import ContainerRunner, RunnerSettings
from localcluster.agent.images import Toolbox
from localcluster.agent.ipalloc import PodIPAllocator
from localcluster.agent.launch import LaunchServices
from localcluster.agent.netns import (
    HostEndpoints,
    LoopbackNetwork,
    NamespaceNetwork,
    PodNetworkError,
)
from localcluster.agent.podworker import PodWorker, WorkerServices
from localcluster.agent.probes import ProbeSpec
from localcluster.agent.process import ContainerProcess
from localcluster.agent.promsd import TargetFile
from localcluster.podnetwork import PodNetworkPlan
from localcluster.relay import serve

pytestmark = pytest.mark.unit


def test_plan_names_fit_linux_limits_and_differ_between_clusters(tmp_path: Path) -> None:
    first = PodNetworkPlan.for_state_dir(tmp_path / "a")
    assert first == PodNetworkPlan.for_state_dir(tmp_path / "a")
    second = PodNetworkPlan.for_state_dir(tmp_path / "b")
    assert (first.netns, first.subnet) != (second.netns, second.subnet)
    assert len(first.host_device) <= 15 and len(first.pod_device) <= 15
    assert first.subnet.startswith("10.244.") and first.subnet.endswith(".0/24")
    assert first.host_address.endswith(".1") and first.namespace_address.endswith(".254")
    moved = first.next_subnet()
    assert moved.netns == first.netns and moved.subnet != first.subnet
    assert moved.host_address == moved.subnet.replace(".0/24", ".1")


def test_reserved_addresses_are_never_handed_out() -> None:
    ips = PodIPAllocator("10.244.9.0/24", reserved=("10.244.9.1", "10.244.9.254"))
    handed = {ips.allocate(str(n)) for n in range(252)}
    assert "10.244.9.254" not in handed and "10.244.9.1" not in handed
    assert len(handed) == 252


def test_a_missing_namespace_fails_loudly() -> None:
    with pytest.raises(PodNetworkError, match="does not exist"):
        NamespaceNetwork("sdpods-nothere-0", "x", HostEndpoints())


def _failing_launcher(container: dict[str, Any]) -> ContainerProcess:
    raise RuntimeError("HTTP 403: namespace t-x is being terminated")


def _never_probed(spec: ProbeSpec, ports: list[dict[str, Any]]) -> tuple[bool, str]:
    raise AssertionError("no process, no probe")


def test_an_unexpected_launch_failure_waits_and_retries_instead_of_raising() -> None:
    settings = RunnerSettings("Always", 2.0, BackoffPolicy(), "ns_p_u")
    runner = ContainerRunner(
        {"name": "c", "image": "i"}, settings, _failing_launcher, _never_probed
    )
    runner.tick(0.0)
    waiting = runner.view().state["waiting"]
    assert waiting["reason"] == "CreateContainerError"
    assert "being terminated" in waiting["message"]
    runner.tick(10.0)  # retried, still no exception
    assert runner.process is None


async def test_relay_forwards_both_directions() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"echo:" + await reader.readline())
        await writer.drain()
        writer.close()

    upstream = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    listen = "127.0.0.2"  # the same port at another address, as on the host veth
    stop = asyncio.Event()
    relay = asyncio.create_task(serve(listen, [port], stop))
    for _ in range(100):
        try:
            reader, writer = await asyncio.open_connection(listen, port)
            break
        except OSError:
            await asyncio.sleep(0.01)
    else:
        pytest.fail("relay never listened")
    writer.write(b"hi\n")
    await writer.drain()
    assert await reader.read() == b"echo:hi\n"
    writer.close()
    stop.set()
    await relay
    upstream.close()


class _RecordingApi:
    """Stands in for KubeRest: records calls, answers {}."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def call(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        self.calls.append((method, path))
        return {}


class _BrokenNetwork(LoopbackNetwork):
    """A pod network whose attach fails: the worker's setup crashes."""

    def attach(self, address: str) -> None:
        raise RuntimeError(f"simulated bug while adding {address}")


def test_a_crashed_pod_worker_still_completes_the_pods_deletion(tmp_path: Path) -> None:
    api = _RecordingApi()
    services = WorkerServices(
        api=api,  # type: ignore[arg-type]
        paths=AgentPaths(tmp_path, tmp_path / "targets.json"),
        ips=PodIPAllocator(),
        targets=TargetFile(tmp_path / "targets.json"),
        launch=LaunchServices(Toolbox.from_interpreter(), None, None, _BrokenNetwork()),  # type: ignore[arg-type]
        backoff=BackoffPolicy(),
    )
    pod: dict[str, Any] = {
        "metadata": {"namespace": "ns", "name": "p", "uid": "u-1"},
        "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "busybox"}]},
    }
    finished: list[str] = []
    worker = PodWorker(pod, services, finished.append)
    worker.start()
    deleting = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "now"}}
    worker.update(deleting)
    worker.join(10)
    assert not worker.is_alive()
    assert ("DELETE", "/api/v1/namespaces/ns/pods/p") in api.calls
    assert finished == ["u-1"]
    assert services.ips.in_use() == {}
