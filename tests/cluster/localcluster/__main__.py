"""Command line of the local cluster: ``python -m localcluster up|down|status|env``.

`up` returns once every component is ready and all fake nodes are Ready, leaving the
processes running in the background; `down` stops them all, also after a crashed run.
Exit codes: 0 on success, 1 when a component fails (its last log lines are printed).
"""

from __future__ import annotations

import argparse
import sys

from localcluster.binaries import BuildFailed
from localcluster.paths import ClusterPaths
from localcluster.podnetwork import PodNetworkUnavailable, loopback_warning
from localcluster.ports import PortTaken
from localcluster.process import ComponentFailed
from localcluster.shutdown import down, status
from localcluster.startup import up
from localcluster.state import ClusterState


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m localcluster", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="start everything in the background")
    start.add_argument(
        "--apiserver-port", type=int, help="use this port instead of a free one (for tests)"
    )
    start.add_argument(
        "--without-agent", action="store_true", help="control plane and Prometheus only"
    )
    commands.add_parser("down", help="stop everything this cluster started")
    commands.add_parser("status", help="which components run, and where")
    commands.add_parser("env", help='print shell exports (eval "$(... env)")')
    return parser


def _up(paths: ClusterPaths, args: argparse.Namespace) -> int:
    fixed = {"kube-apiserver": args.apiserver_port} if args.apiserver_port else {}
    try:
        state, started_now = up(
            paths,
            fixed_ports=fixed,
            with_agent=not args.without_agent,
        )
    except (ComponentFailed, PortTaken, BuildFailed, PodNetworkUnavailable) as error:
        print(f"cluster failed to start: {error}", file=sys.stderr)
        print(f"all logs: {paths.logs_dir}", file=sys.stderr)
        return 1
    if started_now:
        print(f"cluster ready in {state.ready_seconds:.1f} s")
    else:
        print(f"cluster already up (started in {state.ready_seconds:.1f} s); nothing to do")
    print(f"API server: {state.apiserver_url}\nPrometheus: {state.prometheus_url}")
    print(f"logs: {paths.logs_dir}\nuse it: source {paths.env_file}")
    if state.pod_network == "netns":
        print(f"pod network: {state.pod_subnet} in netns {state.pod_netns}, "
              f"host side {state.pod_host_address}")  # fmt: skip
    elif not args.without_agent:
        print(loopback_warning(state.pod_network_problem), file=sys.stderr)
    return 0


def _status(paths: ClusterPaths) -> int:
    running = status(paths)
    for component, pid in running.items():
        print(f"{component:26} {'pid ' + str(pid) if pid else 'not running'}")
    state = ClusterState.load(paths)
    if state is not None:
        print(f"API server: {state.apiserver_url}\nPrometheus: {state.prometheus_url}")
    return 0 if all(running.values()) else 3


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the process exit code."""
    args = _parser().parse_args(argv)
    paths = ClusterPaths.default()
    if args.command == "up":
        return _up(paths, args)
    if args.command == "down":
        stopped = down(paths)
        print(f"stopped {len(stopped)} process group(s)" if stopped else "nothing was running")
        return 0
    if args.command == "status":
        return _status(paths)
    if not paths.env_file.exists():
        print("cluster is not up: run `python -m localcluster up`", file=sys.stderr)
        return 1
    print(paths.env_file.read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
