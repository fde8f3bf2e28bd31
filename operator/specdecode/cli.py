"""`specdecode-operator`: runs the kopf operator with our handlers and settings.

Usage: `specdecode-operator [--namespace NS ...] [--kubeconfig PATH] [--prometheus-url URL]
[--reconcile-interval S] [--metrics-port P]`. Without --namespace it watches the whole
cluster. In a pod it uses the in-cluster service account; elsewhere KUBECONFIG.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os

import kopf

from specdecode.handlers.lifecycle import register_lifecycle_handlers
from specdecode.handlers.rollouts import register_rollout_handlers
from specdecode.settings import OperatorSettings


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
    registry = kopf.OperatorRegistry()
    register_lifecycle_handlers(registry, settings, args.kubeconfig)
    register_rollout_handlers(registry, settings)
    asyncio.run(
        kopf.operator(
            registry=registry,
            standalone=True,
            clusterwide=not settings.namespaces,
            namespaces=list(settings.namespaces),
            liveness_endpoint=os.environ.get("SPECDECODE_LIVENESS_ENDPOINT"),
        )
    )
