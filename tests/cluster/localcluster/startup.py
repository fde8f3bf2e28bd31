"""`up`: start etcd, the API server, controllers, scheduler, node agent and Prometheus.

Order matters for clear failures, not for correctness: each step waits for the previous
one with a deadline and, if a component exits or never gets ready, everything started so
far is stopped and the error carries that component's last log lines. Each `up` starts
from empty etcd, agent and Prometheus data (certificates are kept), so runs do not see each
other's leftovers.

Pod network: before the agent, `up` makes this cluster's network namespace and veth pair
(podnetwork.py), adds the host veth address to the API server certificate, and starts
``pod-relay`` (relay.py) so pods reach the API server and Prometheus on that address. The
agent then puts every pod's processes and IP into the namespace. Without root it falls back
to loopback pod IPs and warns that Services will have no endpoints.

Gateway API: once the controller-manager is ready, the standard-channel Gateway API CRDs a
route needs (gateway_crds.py, fetched once into ~/.cache/specdecode) are applied while the
remaining components get ready; `up` returns only once they are Established.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from localcluster import controlplane, gateway_crds, podnetwork, prometheus, relay
from localcluster.binaries import ensure_binaries
from localcluster.controlplane import ControlPlanePorts
from localcluster.kubeconfig import write_cert_kubeconfig
from localcluster.locking import cluster_lock
from localcluster.nodepool import NodeSpec, default_pool, write_pool
from localcluster.paths import REPO_ROOT, ClusterPaths
from localcluster.pki import ensure_pki
from localcluster.ports import ensure_free, pick_free_ports
from localcluster.process import find_marked_processes, start_component, wait_until_ready
from localcluster.shutdown import down_locked, is_up, status
from localcluster.state import ClusterState, write_env_file

PORT_NAMES = ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
              "prometheus")  # fmt: skip
ETCD_TIMEOUT = 20.0
APISERVER_TIMEOUT = 90.0
COMPONENT_TIMEOUT = 60.0
NODES_TIMEOUT = 60.0
RELAY = "pod-relay"


def _fresh_state_dir(paths: ClusterPaths) -> None:
    for previous_run in (paths.etcd_data_dir, paths.agent_dir, paths.prometheus_dir,
                         paths.logs_dir, paths.state_dir / "controller-manager",
                         paths.state_dir / "scheduler"):  # fmt: skip
        shutil.rmtree(previous_run, ignore_errors=True)
    paths.ensure()
    paths.etcd_data_dir.chmod(0o700)


def _ports(fixed: Mapping[str, int]) -> dict[str, int]:
    picked = pick_free_ports(name for name in PORT_NAMES if name not in fixed)
    ports = {**picked, **fixed}
    for component, port in ports.items():
        ensure_free(port, component)
    return ports


def _node_usable(node: dict[str, Any]) -> bool:
    """Ready, and the node-lifecycle controller has lifted its not-ready/unreachable taints."""
    conditions = node.get("status", {}).get("conditions", [])
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    taints = node.get("spec", {}).get("taints", [])
    return ready and not any(t["key"].startswith("node.kubernetes.io/") for t in taints)


def _nodes_ready(paths: ClusterPaths, url: str, pool: list[NodeSpec]) -> bool:
    code, body = controlplane.https_get(f"{url}/api/v1/nodes", paths)
    if code != 200:
        return False
    usable = {n["metadata"]["name"] for n in json.loads(body)["items"] if _node_usable(n)}
    return {node.name for node in pool} <= usable


def _agent_argv(paths: ClusterPaths, network_args: list[str]) -> list[str]:
    return [
        sys.executable, "-m", "localcluster.agent",
        "--kubeconfig", str(paths.admin_kubeconfig),
        "--state-dir", str(paths.agent_dir),
        "--nodes-config", str(paths.nodes_file),
        "--prometheus-sd-file", str(paths.prometheus_sd_file),
        *network_args,
    ]  # fmt: skip


def _start_all(
    paths: ClusterPaths,
    bin_dir: Path,
    ports: dict[str, int],
    network: podnetwork.PodNetworkOutcome | None,
    gateway_crd_dir: Path,
) -> dict[str, subprocess.Popen[bytes]]:
    """Start every component in order; no ``network`` means no agent at all."""
    cp = ControlPlanePorts(
        etcd_client=ports["etcd"],
        etcd_peer=ports["etcd-peer"],
        apiserver=ports["kube-apiserver"],
        controller_manager=ports["kube-controller-manager"],
        scheduler=ports["kube-scheduler"],
    )
    for identity in ("admin", "controller-manager", "scheduler"):
        write_cert_kubeconfig(paths, cp.apiserver_url, identity)
    children: dict[str, subprocess.Popen[bytes]] = {}
    began = time.monotonic()

    def launch(component: str, argv: list[str], env: Mapping[str, str] | None = None) -> None:
        children[component] = start_component(paths, component, argv, env)

    def await_ready(component: str, probe: Callable[[], bool], timeout: float) -> None:
        log = paths.log_file(component)
        wait_until_ready(component, children[component], probe, timeout, log)
        print(f"[cluster +{time.monotonic() - began:5.1f}s] {component} ready", file=sys.stderr)

    pythonpath = os.pathsep.join(
        filter(None, [str(REPO_ROOT / "tests" / "cluster"), os.environ.get("PYTHONPATH")])
    )
    launch("etcd", controlplane.etcd_argv(bin_dir, paths, cp))
    await_ready("etcd", lambda: controlplane.etcd_healthy(paths, cp), ETCD_TIMEOUT)
    launch("kube-apiserver", controlplane.apiserver_argv(bin_dir, paths, cp))
    await_ready("kube-apiserver", lambda: controlplane.apiserver_ready(paths, cp),
                APISERVER_TIMEOUT)  # fmt: skip
    launch("kube-controller-manager", controlplane.controller_manager_argv(bin_dir, paths, cp))
    launch("kube-scheduler", controlplane.scheduler_argv(bin_dir, paths, cp))
    pool = default_pool()
    write_pool(paths.nodes_file, pool)
    netns = network is not None and network.mode == podnetwork.NETNS_MODE
    if network is not None and netns:
        relayed = [ports["kube-apiserver"], ports["prometheus"]]
        launch(RELAY, relay.argv(network.plan.host_address, relayed), {"PYTHONPATH": pythonpath})
    if network is not None:
        network_args = podnetwork.agent_arguments(network, ports["prometheus"])
        launch("agent", _agent_argv(paths, network_args), {"PYTHONPATH": pythonpath})
    children["prometheus"] = prometheus.start(paths, ports["prometheus"])
    if network is not None and netns:
        address = network.plan.host_address
        await_ready(RELAY, lambda: relay.listening(address, ports["kube-apiserver"]),
                    COMPONENT_TIMEOUT)  # fmt: skip
    # Healthy, and its ServiceAccount controller has made default/default (pods need it).
    await_ready("kube-controller-manager",
                lambda: controlplane.component_healthy(paths, cp.controller_manager)
                and controlplane.default_service_account_exists(paths, cp),
                COMPONENT_TIMEOUT)  # fmt: skip
    # Not a component (kubectl exits when done). Started only now because installing the
    # CRDs costs the API server about 0.7 s of CPU, which slowed the controller-manager's
    # start by more than that; now it overlaps the scheduler, Prometheus and the agent.
    crd_apply = gateway_crds.start_apply(paths, bin_dir, gateway_crd_dir)
    await_ready("kube-scheduler", lambda: controlplane.component_healthy(paths, cp.scheduler),
                COMPONENT_TIMEOUT)  # fmt: skip
    await_ready("prometheus", lambda: prometheus.ready(ports["prometheus"]), COMPONENT_TIMEOUT)
    gateway_crds.finish_apply(paths, crd_apply, cp.apiserver_url, gateway_crds.crd_names(),
                              COMPONENT_TIMEOUT)  # fmt: skip
    print(f"[cluster +{time.monotonic() - began:5.1f}s] {gateway_crds.COMPONENT} established",
          file=sys.stderr)  # fmt: skip
    if network is not None:
        await_ready("agent", lambda: _nodes_ready(paths, cp.apiserver_url, pool), NODES_TIMEOUT)
    return children


def up(
    paths: ClusterPaths,
    bin_dir: Path | None = None,
    fixed_ports: Mapping[str, int] | None = None,
    with_agent: bool = True,
) -> tuple[ClusterState, bool]:
    """Start the cluster unless it is already up; returns (state, started_now).

    ``with_agent=False`` runs the control plane and Prometheus without nodes (debugging).
    With the agent, pods live in a network namespace of this cluster (podnetwork.py); if
    that cannot be made (not root), pods get loopback IPs and a warning is printed.
    """
    with cluster_lock(paths):
        return _up_locked(paths, bin_dir, fixed_ports or {}, with_agent)


def _pod_network(paths: ClusterPaths, with_agent: bool) -> podnetwork.PodNetworkOutcome | None:
    if not with_agent:
        return None
    network = podnetwork.create(podnetwork.PodNetworkPlan.for_state_dir(paths.state_dir))
    podnetwork.require_netns(network)
    if network.mode != podnetwork.NETNS_MODE:
        print(podnetwork.loopback_warning(network.problem), file=sys.stderr)
    return network


def _up_locked(
    paths: ClusterPaths,
    bin_dir: Path | None,
    fixed_ports: Mapping[str, int],
    with_agent: bool,
) -> tuple[ClusterState, bool]:
    started = time.monotonic()
    existing = ClusterState.load(paths)
    if is_up(paths) and existing is not None:
        return existing, False
    if any(status(paths).values()) or find_marked_processes(paths.state_dir):
        down_locked(paths)  # half-up from an earlier crash: start clean
    prometheus.find_binary()  # a missing Debian package fails before anything starts
    bin_dir = bin_dir or ensure_binaries()
    gateway_crd_dir = gateway_crds.ensure_crds()
    _fresh_state_dir(paths)
    ports = _ports(fixed_ports)
    network = _pod_network(paths, with_agent)
    netns = network is not None and network.mode == podnetwork.NETNS_MODE
    try:
        extra_ips = (network.plan.host_address,) if network is not None and netns else ()
        ensure_pki(paths.pki_dir, extra_ips)
        children = _start_all(paths, bin_dir, ports, network, gateway_crd_dir)
    except BaseException:
        down_locked(paths)
        raise
    state = ClusterState(
        state_dir=str(paths.state_dir),
        bin_dir=str(bin_dir),
        kubeconfig=str(paths.admin_kubeconfig),
        apiserver_url=f"https://127.0.0.1:{ports['kube-apiserver']}",
        prometheus_url=f"http://127.0.0.1:{ports['prometheus']}",
        ports=ports,
        pids={component: child.pid for component, child in children.items()},
        started_at=time.time(),
        ready_seconds=round(time.monotonic() - started, 2),
        pod_network=network.mode if network is not None else podnetwork.LOOPBACK_MODE,
        pod_network_problem=network.problem if network is not None else "no agent",
        pod_subnet=network.plan.subnet if network is not None and netns else None,
        pod_host_address=network.plan.host_address if network is not None and netns else None,
        pod_netns=network.plan.netns if network is not None and netns else None,
    )
    state.save(paths)
    write_env_file(paths, state)
    return state, True
