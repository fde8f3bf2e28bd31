"""`kubectl specdecode`: a rollout's gate table at a glance, and the promote/abort/retry actions.

kubectl finds any executable named `kubectl-specdecode` on PATH and runs it for
`kubectl specdecode ...`; it passes no flags of its own, so this follows kubectl's
conventions itself: `--kubeconfig` (else KUBECONFIG, else ~/.kube/config), `--context`,
`-n/--namespace` (else the context's namespace, else "default"), `-A` for list, and
`-o table|json|yaml`. Actions only set the `specdecode.io/action` annotation; the operator
acts on it once and removes it, exactly as for `kubectl annotate` or an Argo CD action.
Exit codes: 0 done, 1 the API said no (missing rollout, CRD not installed, forbidden), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

import yaml
from kubernetes import client, config
from kubernetes.client import ApiException
from kubernetes.config import ConfigException

from specdecode.api import ACTION_ANNOTATION, ACTIONS, GROUP, PLURAL, VERSION
from specdecode.report import gate_table

RESOURCE = f"{PLURAL}.{GROUP}"
OUTPUTS = ("table", "json", "yaml")
LIST_COLUMNS = ("NAME", "PHASE", "STAGE", "VERDICT", "ALPHA", "ITL-RATIO", "AGE", "MESSAGE")


class PluginError(Exception):
    """A failure to report in one line with exit code 1 (never a traceback)."""


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
    listing = commands.add_parser("list", help="every rollout in the namespace", parents=[flags])
    listing.add_argument("-A", "--all-namespaces", action="store_true")
    for action in ACTIONS:
        sub = commands.add_parser(action, help=f"set {ACTION_ANNOTATION}={action}", parents=[flags])
        sub.add_argument("name")
    return parser.parse_args(argv)


@dataclass(frozen=True)
class Target:
    """Where to talk to: an authenticated client and the namespace kubectl would use."""

    api: client.CustomObjectsApi
    namespace: str


def connect(kubeconfig: str | None, context: str | None, namespace: str | None) -> Target:
    """Load the kubeconfig like kubectl does (in-cluster config when there is none)."""
    try:
        api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context
        )
        contexts, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=kubeconfig
        )
        if context is not None:
            active = next((c for c in contexts if c["name"] == context), active)
        default_namespace = (active or {}).get("context", {}).get("namespace") or "default"
    except (ConfigException, FileNotFoundError) as error:
        if kubeconfig is not None or context is not None:
            raise PluginError(f"cannot load kubeconfig: {error}") from error
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except ConfigException as incluster_error:
            raise PluginError(f"no kubeconfig and not in a pod: {error}") from incluster_error
        api_client, default_namespace = client.ApiClient(), "default"
    return Target(client.CustomObjectsApi(api_client), namespace or default_namespace)


def explain(error: ApiException, namespace: str, name: str | None) -> PluginError:
    """Turn an API error into the sentence a user needs (missing object vs missing CRD)."""
    try:
        body = json.loads(error.body or "{}")
    except (TypeError, ValueError):
        body = {}
    details = body.get("details") or {} if isinstance(body, dict) else {}
    if error.status == 404 and details.get("kind") == PLURAL:
        return PluginError(f'{RESOURCE} "{name}" not found in namespace "{namespace}"')
    if error.status == 404:
        return PluginError(
            f"the server doesn't have the resource {RESOURCE}: is the CRD installed? "
            "(helm install specdecode-operator charts/specdecode-operator)"
        )
    reason = body.get("message") if isinstance(body, dict) else None
    return PluginError(f"{error.status} {error.reason}: {reason or error.body}")


def age(timestamp: object, now: datetime) -> str:
    """kubectl-style age: 45s, 12m, 3h, 2d."""
    if not isinstance(timestamp, str):
        return "-"
    started = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    seconds = max(0, int((now - started).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def status_text(rollout: Mapping[str, Any], now: datetime) -> str:
    """The gate table, plus how long the rollout has been in its phase."""
    status = rollout.get("status") or {}
    since = age(status.get("phaseSince"), now)
    return f"{gate_table(rollout, now)}\n  time in phase {status.get('phase', '-')}: {since}"


def list_table(rollouts: Sequence[Mapping[str, Any]], all_namespaces: bool, now: datetime) -> str:
    """One line per rollout, like `kubectl get`, with the namespace column under -A."""
    header = (("NAMESPACE",) if all_namespaces else ()) + LIST_COLUMNS
    rows = [list(header)]
    for item in rollouts:
        meta, status = item.get("metadata", {}), item.get("status") or {}
        row = [
            str(meta.get("name", "")),
            str(status.get("phase") or "-"),
            str(status.get("currentStage") or "-"),
            str(status.get("verdict") or "-"),
            str(status.get("alpha") or "-"),
            str(status.get("itlRatio") or "-"),
            age(meta.get("creationTimestamp"), now),
            str(status.get("message") or "")[:60],
        ]
        rows.append(([str(meta.get("namespace", ""))] if all_namespaces else []) + row)
    if len(rows) == 1:
        return "No resources found"
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def render(value: Any, output: str, table: Callable[[], str]) -> str:
    """The requested output format of an object (or list) from the API server."""
    if output == "json":
        return json.dumps(value, indent=2, sort_keys=True)
    if output == "yaml":
        return yaml.safe_dump(value, sort_keys=False).rstrip()
    return table()


def _as_object(value: object) -> dict[str, Any]:
    """The client returns custom objects as plain JSON dicts (typed `object`)."""
    if not isinstance(value, dict):
        raise PluginError(f"unexpected answer from the API server: {type(value).__name__}")
    return value


def _list(
    api: client.CustomObjectsApi, args: argparse.Namespace, namespace: str, now: datetime
) -> str:
    if args.all_namespaces:
        found = _as_object(api.list_cluster_custom_object(GROUP, VERSION, PLURAL))
    else:
        found = _as_object(api.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL))
    items = found.get("items") or []
    return render(found, args.output, lambda: list_table(items, args.all_namespaces, now))


def _get(
    api: client.CustomObjectsApi, args: argparse.Namespace, namespace: str, now: datetime
) -> str:
    rollout = _as_object(
        api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, args.name)
    )
    return render(rollout, args.output, lambda: status_text(rollout, now))


def _act(
    api: client.CustomObjectsApi, args: argparse.Namespace, namespace: str, now: datetime
) -> str:
    del now
    patch = {"metadata": {"annotations": {ACTION_ANNOTATION: args.command}}}
    rollout = _as_object(
        api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            args.name,
            patch,
            _content_type="application/merge-patch+json",
        )
    )
    phase = (rollout.get("status") or {}).get("phase", "-")
    summary = f"{RESOURCE}/{args.name} annotated {ACTION_ANNOTATION}={args.command} (phase {phase})"
    return render(rollout, args.output, lambda: summary)


Command = Callable[[client.CustomObjectsApi, argparse.Namespace, str, datetime], str]
COMMANDS: dict[str, Command] = {
    "list": _list,
    "get": _get,
    "status": _get,
    **{action: _act for action in ACTIONS},
}


def run(args: argparse.Namespace, out: TextIO, now: datetime) -> None:
    """Do what the parsed command line asks; raise PluginError on failure."""
    target = connect(args.kubeconfig, args.context, args.namespace)
    try:
        text = COMMANDS[args.command](target.api, args, target.namespace, now)
    except ApiException as error:
        raise explain(error, target.namespace, getattr(args, "name", None)) from error
    out.write(text + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    """Console script `kubectl-specdecode`."""
    args = parse_args(argv)
    try:
        run(args, sys.stdout, datetime.now(UTC))
    except PluginError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(1) from error
