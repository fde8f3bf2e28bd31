"""`python -m localcluster.agent`: run the node agent until SIGTERM or SIGINT.

    python -m localcluster.agent --kubeconfig <admin kubeconfig> --state-dir .cluster/agent \
        --nodes-config .cluster/nodes.json --prometheus-sd-file .cluster/prometheus/targets.json
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

from .agent import Agent
from .backoff import BackoffPolicy, scale_from_env
from .config import AgentPaths, load_nodes
from .ipalloc import PodIPAllocator, check_bindable, subnet_for
from .kubeapi import KubeRest

POD_SUBNET_ENV = "SPECDECODE_AGENT_POD_SUBNET"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options (all required: the harness always passes them)."""
    parser = argparse.ArgumentParser(prog="python -m localcluster.agent", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--nodes-config", type=Path, required=True)
    parser.add_argument("--prometheus-sd-file", type=Path, required=True)
    parser.add_argument(
        "--pod-subnet",
        default=os.environ.get(POD_SUBNET_ENV),
        help="IPv4 subnet for pod IPs, .1 excluded (default: 127.X.Y.0/24 derived from "
        "--state-dir). EndpointSlices refuse loopback addresses; for Services with "
        "endpoints use a subnet outside 127.0.0.0/8 that is local (added to lo).",
    )
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Start the agent, wait for a signal, stop every pod process, exit 0."""
    options = parse_args(argv)
    logging.basicConfig(
        level=options.log_level,
        format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s",
    )
    ips = PodIPAllocator(options.pod_subnet or subnet_for(options.state_dir))
    check_bindable(ips.first_address)
    agent = Agent(
        api=KubeRest(options.kubeconfig),
        nodes=load_nodes(options.nodes_config),
        paths=AgentPaths(
            state_dir=options.state_dir.resolve(), sd_file=options.prometheus_sd_file.resolve()
        ),
        backoff=BackoffPolicy(scale=scale_from_env()),
        ips=ips,
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
