"""`python -m localcluster.agent`: run the node agent until SIGTERM or SIGINT.

    python -m localcluster.agent --kubeconfig <admin kubeconfig> --state-dir .cluster/agent \
        --nodes-config .cluster/nodes.json --prometheus-sd-file .cluster/prometheus/targets.json \
        [--netns sdpods-ab12cd --netns-device sdab12cdp --pod-subnet 10.244.7.0/24 \
         --gateway 10.244.7.1 --reserved-address 10.244.7.254 --prometheus-port 9090]

With ``--netns`` pods live in that network namespace (made by the harness, see
localcluster/podnetwork.py) and reach the API server and Prometheus at the gateway address;
without it they get loopback IPs on the host (Services then have no endpoints).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path
from urllib.parse import urlparse

from .agent import Agent
from .backoff import BackoffPolicy, scale_from_env
from .config import AgentPaths, load_nodes
from .ipalloc import PodIPAllocator, check_bindable, subnet_for
from .kubeapi import KubeRest
from .netns import HostEndpoints, LoopbackNetwork, NamespaceNetwork, PodNetwork, PodNetworkError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options (all required: the harness always passes them)."""
    parser = argparse.ArgumentParser(prog="python -m localcluster.agent", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--nodes-config", type=Path, required=True)
    parser.add_argument("--prometheus-sd-file", type=Path, required=True)
    parser.add_argument("--netns", help="network namespace for pods (default: host loopback)")
    parser.add_argument("--netns-device", help="the namespace side of the veth pair")
    parser.add_argument(
        "--pod-subnet",
        help="IPv4 subnet for pod IPs, .1 excluded (default: 127.X.Y.0/24 derived from "
        "--state-dir; with --netns the namespace's subnet)",
    )
    parser.add_argument("--gateway", help="host side of the veth: pods reach the host here")
    parser.add_argument(
        "--reserved-address", action="append", default=[], help="never given to a pod"
    )
    parser.add_argument("--prometheus-port", type=int, help="Prometheus port (relayed)")
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def _pod_network(options: argparse.Namespace, api: KubeRest) -> PodNetwork:
    """The netns pod network the harness made, or host loopback without --netns."""
    if not options.netns:
        return LoopbackNetwork()
    missing = [
        flag for flag in ("netns_device", "pod_subnet", "gateway") if not getattr(options, flag)
    ]
    if missing:
        raise SystemExit(f"--netns needs {', '.join('--' + m.replace('_', '-') for m in missing)}")
    gateway = str(options.gateway)
    apiserver_port = urlparse(api.server).port or 443
    prometheus = f"http://{gateway}:{options.prometheus_port}" if options.prometheus_port else None
    endpoints = HostEndpoints(f"https://{gateway}:{apiserver_port}", prometheus)
    try:
        return NamespaceNetwork(str(options.netns), str(options.netns_device), endpoints)
    except PodNetworkError as error:
        raise SystemExit(str(error)) from error


def main(argv: list[str] | None = None) -> int:
    """Start the agent, wait for a signal, stop every pod process, exit 0."""
    options = parse_args(argv)
    logging.basicConfig(
        level=options.log_level,
        format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s",
    )
    api = KubeRest(options.kubeconfig)
    network = _pod_network(options, api)
    if isinstance(network, NamespaceNetwork):
        reserved = (str(options.gateway), *options.reserved_address)
        ips = PodIPAllocator(str(options.pod_subnet), reserved)
    else:
        ips = PodIPAllocator(options.pod_subnet or subnet_for(options.state_dir))
        check_bindable(ips.first_address)
    agent = Agent(
        api=api,
        nodes=load_nodes(options.nodes_config),
        paths=AgentPaths(
            state_dir=options.state_dir.resolve(), sd_file=options.prometheus_sd_file.resolve()
        ),
        backoff=BackoffPolicy(scale=scale_from_env()),
        ips=ips,
        network=network,
    )
    signal.signal(signal.SIGTERM, lambda *_: agent.stop.set())
    signal.signal(signal.SIGINT, lambda *_: agent.stop.set())
    agent.start()
    while not agent.stop.wait(1.0):
        pass
    logging.getLogger(__name__).info("stopping: killing pod processes")
    agent.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
