"""`specdecode-operator`: runs the kopf operator with our handlers and settings.

Usage: `specdecode-operator [--namespace NS ...] [--kubeconfig PATH] [--prometheus-url URL]
[--reconcile-interval S] [--metrics-port P] [--leader-elect]`. Without --namespace it
watches the whole cluster. In a pod it uses the in-cluster service account; elsewhere
KUBECONFIG. With --leader-elect (or SPECDECODE_LEADER_ELECTION=true, as the chart sets)
it reconciles only while it holds the Lease (see `handlers.leadership`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import sys
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import kopf

from specdecode.adapters.kube.client import KUBE_CONCURRENCY, Fence
from specdecode.adapters.telemetry import OperatorMetrics
from specdecode.handlers.leadership import elector_for, run_when_leading
from specdecode.handlers.lifecycle import register_lifecycle_handlers
from specdecode.handlers.rollouts import register_rollout_handlers
from specdecode.handlers.tunings import register_tuning_handlers
from specdecode.handlers.watches import register_watches
from specdecode.settings import OperatorSettings

T = TypeVar("T")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line flags; each overrides the matching SPECDECODE_* environment variable."""
    parser = argparse.ArgumentParser(prog="specdecode-operator", description=__doc__)
    parser.add_argument(
        "--namespace",
        "-n",
        action="append",
        default=[],
        help="namespace to watch (repeatable); default: all namespaces",
    )
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--prometheus-url")
    parser.add_argument("--reconcile-interval", type=float)
    parser.add_argument("--metrics-port", type=int)
    parser.add_argument(
        "--leader-elect", action="store_true", help="reconcile only while holding the Lease"
    )
    parser.add_argument("--verbose", "-v", action="store_true")
    return parser.parse_args(argv)


def settings_from(args: argparse.Namespace) -> OperatorSettings:
    """Environment settings with command-line overrides applied."""
    settings = OperatorSettings.from_env()
    overrides: dict[str, object] = {}
    if args.namespace:
        overrides["namespaces"] = tuple(args.namespace)
    if args.prometheus_url:
        overrides["prometheus_url"] = args.prometheus_url
    if args.reconcile_interval:
        overrides["reconcile_interval_seconds"] = args.reconcile_interval
    if args.metrics_port is not None:
        overrides["metrics_port"] = args.metrics_port
    if args.leader_elect:
        overrides["leader_election"] = True
    return dataclasses.replace(settings, **overrides)  # type: ignore[arg-type]


class _QuietSuccesses(logging.Filter):
    """Drops kopf's "Timer/Handler ... succeeded" lines: one per rollout per tick is noise;
    transitions are logged (and posted as Events) by the handlers themselves."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (record.levelno == logging.INFO and message.endswith("succeeded."))


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script."""
    args = parse_args(argv)
    settings = settings_from(args)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.kubeconfig:
        os.environ["KUBECONFIG"] = args.kubeconfig  # kopf's login reads it from there
    logging.getLogger("kopf.objects").addFilter(_QuietSuccesses())
    if not args.verbose:  # one line per load-pod report or engine request: DEBUG only
        logging.getLogger("httpx").setLevel(logging.WARNING)
    metrics = OperatorMetrics()  # served from the start: a standby is scraped too
    if settings.metrics_port:
        metrics.serve(settings.metrics_host, settings.metrics_port)
    registry = kopf.OperatorRegistry()
    fence = Fence()  # closed by leadership when this replica must stop sending requests
    register_lifecycle_handlers(registry, settings, args.kubeconfig, metrics, fence)
    register_watches(registry)
    register_rollout_handlers(registry)
    register_tuning_handlers(registry)
    liveness = os.environ.get("SPECDECODE_LIVENESS_ENDPOINT")

    async def run_operator(stop_flag: asyncio.Event | None = None) -> None:
        await kopf.operator(
            registry=registry,
            standalone=True,  # the Lease, not kopf's peering, decides who works
            clusterwide=not settings.namespaces,
            namespaces=list(settings.namespaces),
            liveness_endpoint=liveness,
            stop_flag=stop_flag,
        )

    if settings.leader_election:
        problem = settings.fencing_problem()
        if problem is not None:  # two leaders at once is worse than none
            sys.exit(f"specdecode-operator: cannot fence a leader: {problem}")
        elector = elector_for(settings, args.kubeconfig)
        leading = run_when_leading(
            settings,
            elector,
            run_operator,
            liveness,
            lambda on: metrics.leader.set(float(on)),
            fence,
        )
        sys.exit(asyncio.run(with_kube_threads(leading)))
    metrics.leader.set(1.0)
    asyncio.run(with_kube_threads(run_operator()))


async def with_kube_threads(work: Awaitable[T]) -> T:
    """Run `work` with the event loop's default executor (what `asyncio.to_thread` uses
    for every blocking API request) sized to `KUBE_CONCURRENCY`, set before anything
    starts: the default (cores + 4 threads) queued a burst of new rollouts' requests."""
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=KUBE_CONCURRENCY, thread_name_prefix="kube")
    )
    return await work
