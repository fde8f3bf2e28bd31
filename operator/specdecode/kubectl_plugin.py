"""`kubectl specdecode`: rollout gate tables, promote/abort/retry, and tunings with their reports.

kubectl runs any `kubectl-specdecode` on PATH and passes no flags, so this follows kubectl's
conventions itself (`--kubeconfig`, `--context`, `-n`, `-A`, `-o`). Actions only set the
`specdecode.io/action` annotation. Tunings: `kubectl_tuning`. Exit codes: 0 done, 1 the API
said no or a report could not be read, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from kubernetes.client import ApiException

from specdecode import kubectl_tuning
from specdecode.api import ACTION_ANNOTATION, ACTIONS, GROUP, PLURAL, VERSION
from specdecode.api.tuning import PLURAL as TUNING_PLURAL
from specdecode.domain.adoption import owner_patch_files
from specdecode.kubectl_common import (
    OUTPUTS,
    PluginError,
    Target,
    age,
    as_object,
    connect,
    explain,
    object_table,
    render,
)
from specdecode.report import gate_table

RESOURCE = f"{PLURAL}.{GROUP}"
LIST_COLUMNS = ("NAME", "PHASE", "STAGE", "VERDICT", "ALPHA", "ITL-RATIO", "AGE", "MESSAGE")


def _flags(top_level: bool) -> argparse.ArgumentParser:
    """The kubectl-style flags; below a subcommand their defaults are suppressed, so a flag
    given before the subcommand (`-n ns get x`) is not reset by the subcommand's default."""
    flags = argparse.ArgumentParser(add_help=False)
    default: dict[str, Any] = {} if top_level else {"default": argparse.SUPPRESS}
    flags.add_argument("-n", "--namespace", help="namespace (default: the context's)", **default)
    flags.add_argument("--context", help="kubeconfig context to use", **default)
    flags.add_argument("--kubeconfig", help="path to the kubeconfig file", **default)
    output_default = {"default": "table"} if top_level else default
    flags.add_argument("-o", "--output", choices=OUTPUTS, **output_default)
    return flags


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """kubectl-style flags, accepted before or after the subcommand."""
    parser = argparse.ArgumentParser(
        prog="kubectl specdecode",
        description=(__doc__ or "").split("\n", 1)[0],
        parents=[_flags(top_level=True)],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    flags = _flags(top_level=False)
    for name, text in (("get", "the gate table of one rollout"), ("status", "same as get")):
        commands.add_parser(name, help=text, parents=[flags]).add_argument("name")
    owner = "the change that promotes the passed config of a workloadRef rollout (GitOps)"
    patch = commands.add_parser("patch", help=owner, parents=[flags])
    patch.add_argument("name")
    patch.add_argument(
        "--format",
        choices=("strategic", "kustomize"),
        default="strategic",
        help="strategic: the JSON for `kubectl patch --type strategic -p`; kustomize: a patch "
        "file for a kustomization's `patches:` (it names the Deployment)",
    )
    listing = commands.add_parser("list", help="every rollout in the namespace", parents=[flags])
    listing.add_argument("-A", "--all-namespaces", action="store_true")
    for action in ACTIONS:
        sub = commands.add_parser(action, help=f"set {ACTION_ANNOTATION}={action}", parents=[flags])
        sub.add_argument("name")
    kubectl_tuning.add_command(commands, flags)
    return parser.parse_args(argv)


def status_text(rollout: Mapping[str, Any], now: datetime) -> str:
    """The gate table, plus how long the rollout has been in its phase."""
    status = rollout.get("status") or {}
    since = age(status.get("phaseSince"), now)
    return f"{gate_table(rollout, now)}\n  time in phase {status.get('phase', '-')}: {since}"


def list_table(rollouts: Sequence[Mapping[str, Any]], all_namespaces: bool, now: datetime) -> str:
    """One line per rollout, like `kubectl get`, with the namespace column under -A."""

    def row(meta: Mapping[str, Any], status: Mapping[str, Any]) -> list[str]:
        return [
            str(meta.get("name", "")),
            str(status.get("phase") or "-"),
            str(status.get("currentStage") or "-"),
            str(status.get("verdict") or "-"),
            str(status.get("alpha") or "-"),
            str(status.get("itlRatio") or "-"),
            age(meta.get("creationTimestamp"), now),
            str(status.get("message") or "")[:60],
        ]

    return object_table(rollouts, all_namespaces, LIST_COLUMNS, row)


def _list(target: Target, args: argparse.Namespace, now: datetime) -> str:
    api, namespace = target.api, target.namespace
    if args.all_namespaces:
        found = as_object(api.list_cluster_custom_object(GROUP, VERSION, PLURAL))
    else:
        found = as_object(api.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL))
    items = found.get("items") or []
    return render(found, args.output, lambda: list_table(items, args.all_namespaces, now))


def _get(target: Target, args: argparse.Namespace, now: datetime) -> str:
    rollout = as_object(
        target.api.get_namespaced_custom_object(GROUP, VERSION, target.namespace, PLURAL, args.name)
    )
    return render(rollout, args.output, lambda: status_text(rollout, now))


def owner_patch_text(rollout: Mapping[str, Any], form: str = "strategic") -> str:
    """The strategic-merge patch (JSON) the source's owner applies or commits to Git, alone
    on stdout so it pipes: `kubectl patch deployment SRC --type strategic -p "$(kubectl
    specdecode patch NAME)"`. PluginError while no config passed, or without workloadRef."""
    meta = rollout.get("metadata") or {}
    workload = (rollout.get("status") or {}).get("workload") or {}
    patch = workload.get("ownerPatch")
    if not patch:
        why = "no workloadRef" if not workload else "no config has passed yet"
        raise PluginError(f"{RESOURCE}/{meta.get('name')}: no patch to apply ({why})")
    if form == "kustomize":
        files = owner_patch_files(
            str(workload.get("source", "")), str(meta.get("namespace")), patch
        )
        return files["kustomize-patch.yaml"].rstrip()
    return str(patch)


def _patch(target: Target, args: argparse.Namespace, now: datetime) -> str:
    del now
    rollout = as_object(
        target.api.get_namespaced_custom_object(GROUP, VERSION, target.namespace, PLURAL, args.name)
    )
    return render(rollout, args.output, lambda: owner_patch_text(rollout, args.format))


def _act(target: Target, args: argparse.Namespace, now: datetime) -> str:
    del now
    patch = {"metadata": {"annotations": {ACTION_ANNOTATION: args.command}}}
    rollout = as_object(
        target.api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            target.namespace,
            PLURAL,
            args.name,
            patch,
            _content_type="application/merge-patch+json",
        )
    )
    phase = (rollout.get("status") or {}).get("phase", "-")
    summary = f"{RESOURCE}/{args.name} annotated {ACTION_ANNOTATION}={args.command} (phase {phase})"
    return render(rollout, args.output, lambda: summary)


Command = Callable[[Target, argparse.Namespace, datetime], str]
COMMANDS: dict[str, Command] = {
    "list": _list,
    "get": _get,
    "status": _get,
    "patch": _patch,
    **{action: _act for action in ACTIONS},
    "tuning": kubectl_tuning.show,
}


def execute(target: Target, args: argparse.Namespace, now: datetime) -> str:
    """The text a parsed command line prints against `target`; PluginError on failure."""
    try:
        return COMMANDS[args.command](target, args, now)
    except ApiException as error:
        plural = TUNING_PLURAL if args.command == "tuning" else PLURAL
        raise explain(error, target.namespace, getattr(args, "name", None), plural) from error


def run(args: argparse.Namespace, out: TextIO, now: datetime) -> None:
    """Do what the parsed command line asks; raise PluginError on failure."""
    target = connect(args.kubeconfig, args.context, args.namespace)
    out.write(execute(target, args, now) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    """Console script `kubectl-specdecode`."""
    args = parse_args(argv)
    try:
        run(args, sys.stdout, datetime.now(UTC))
    except PluginError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(1) from error
