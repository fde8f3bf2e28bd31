"""`make demo`: a live speculative-decoding rollout on the local cluster, start to verdict.

    python -m localcluster.demo [--scenario promote|rollback|mirror|mirror-rollback|
                                 mirror-serverside|real] [--namespace demo]

Starts (or reuses) the local control plane, installs the CRD, runs the operator in the
background, applies examples/simulator/specdecode-rollout.yaml, and prints the gate table
when a stage starts and at the verdict, with a line per change in between (localcluster/
progress.py), until the rollout is Promoted or RolledBack. The `rollback`
scenario makes the simulated draft head weak (low acceptance), so the acceptance gate
must roll it back. The `mirror` scenario puts an HTTPRoute and a gateway process in front
of production, plays live users through it, and judges the example's own stages and gates
on a copy of their requests instead of replayed prompts: the operator adds one Gateway API
RequestMirror toward its shadow splitter, which sends each copy to both shadows and times
both streams (Splitter pairing), so it must promote like `promote`; `mirror-rollback` is
`rollback`'s weak head on the same mirrored users, so a Failed gate must roll it back
(as in `rollback`, the demo exits non-zero if no gate Failed). `mirror-serverside`
mirrors to each shadow instead and judges server-side gates only, which cannot show the
candidate's tail is no slower: it must roll back Inconclusive. The `real`
scenario runs the same stages on the real vLLM (its CPU build, installed on first use) with
tiny locally made models (localcluster/realvllm.py): the verdict is whatever the gates
decide. Exits non-zero if the verdict is not the one the scenario expects.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from typing import Any

import yaml

from localcluster import realvllm
from localcluster.demo_scenarios import (
    ENDINGS,
    EXPECTED,
    MIRROR_SCENARIOS,
    REJECTED_BY_A_GATE,
    as_expected,
    scenario_manifest,
)
from localcluster.gateway_process import running_gateway
from localcluster.handle import LocalCluster
from localcluster.live_traffic import live_users
from localcluster.manifests import merged
from localcluster.mirror_scenario import ROUTE, mirror_targets, route_filters, route_manifest
from localcluster.operator_process import OperatorProcess, install_crds
from localcluster.paths import ClusterPaths
from localcluster.process import is_alive, read_pid, stop_processes
from localcluster.progress import change_lines, gates_with_verdict, stage_started
from localcluster.rollouts import Rollout
from localcluster.shutdown import is_up
from localcluster.startup import up
from specdecode.report import gate_table

REAL_NOTICE = (
    "the real vLLM (CPU build 0.32.0) on a shared CPU, serving a 2-layer Llama with random "
    "weights and a draft that computes the same function at 8x its depth (it agrees on ~99 % "
    "of tokens and costs more than it saves): timings are a CPU's, not a GPU's, and the "
    "acceptance comes from made-up models, not from any real draft head"
)
DEMO_TIMEOUT_SECONDS = 900


def restart_operator(cluster: LocalCluster) -> None:
    """Run a fresh operator in the background (one left by an earlier demo may be stale)."""
    pid = read_pid(cluster.paths, "operator")
    if pid is not None and is_alive(pid):
        stop_processes([pid])
    process = OperatorProcess(cluster, reconcile_interval=2.0).start()
    assert process.child is not None
    print(f"operator started (pid {process.child.pid}), log: {process.log_file}")


@contextmanager
def mirror_setup(
    cluster: LocalCluster, namespace: str, rollout: str
) -> Iterator[Callable[[], str]]:
    """Route, gateway and live users for the mirror scenarios; yields a route summary.

    On the way out it prints what the gateway did with the copies (per mirror backend:
    sent, succeeded, failed, unroutable) and the users' answers: the evidence that the
    mirrored requests reached the splitter or the shadows.
    """
    route = route_manifest(namespace, rollout)
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(route))
    with running_gateway(cluster, namespace, ROUTE) as gateway:
        print(f"gateway for HTTPRoute {namespace}/{ROUTE} on {gateway.url}; 8 live users")
        with live_users(gateway.url, "llama-3.1-8b-instruct", concurrency=8) as users:
            yield lambda: route_mirrors(cluster, namespace)
            print(f"gateway copies: {gateway.stats()['mirrors']}")
            print(f"live users: {users.ok} answered, {users.failed} failed")


def route_mirrors(cluster: LocalCluster, namespace: str) -> str:
    """One line: the RequestMirror filters the route carries now."""
    targets = mirror_targets(route_filters(cluster, namespace))
    mirrors = [f"{service} {percent}%" for service, percent in targets.items()]
    return f"HTTPRoute {ROUTE} mirrors: {', '.join(mirrors) or 'none'}"


def watch(
    rollout: Rollout, timeout: float, extra: Callable[[], str] | None = None
) -> dict[str, Any]:
    """Print the gate table when a stage starts and at the verdict, and in between one line
    per change (phase, stage, a gate's new look, the message); return the rollout as it
    ended (its phase "Timeout" if it did not end in time)."""
    deadline = time.monotonic() + timeout
    seen: dict[str, Any] = {}
    shown_extra = ""
    while time.monotonic() < deadline:
        document = rollout.get()
        clock = f"{datetime.now(UTC):%H:%M:%S}"
        if stage_started(seen, document):
            print(f"\n--- {clock}\n{gate_table(document, now=datetime.now(UTC))}", flush=True)
        else:
            for line in change_lines(seen, document):
                print(f"{clock} {line}", flush=True)
        seen = document
        if extra is not None and (now_extra := extra()) != shown_extra:
            print(f"{clock} {now_extra}", flush=True)
            shown_extra = now_extra
        phase = (document.get("status") or {}).get("phase")
        if phase in ENDINGS:
            print(f"\n--- {clock}\n{gate_table(document, now=datetime.now(UTC))}", flush=True)
            return document
        time.sleep(1.0)  # a terminal refresh rate, not a wait for a condition
    timed_out: dict[str, Any] = merged(seen, {"status": {"phase": "Timeout"}})
    return timed_out


def main(argv: list[str] | None = None) -> int:
    """Run the demo; 0 when the verdict is the one the scenario expects."""
    parser = argparse.ArgumentParser(prog="localcluster.demo", description=__doc__)
    parser.add_argument("--scenario", choices=sorted(EXPECTED), default="promote")
    parser.add_argument("--namespace", default="demo")
    args = parser.parse_args(argv)

    paths = ClusterPaths.default()
    started = time.monotonic()
    models = None
    if args.scenario == "real":
        print(f"real vLLM: {REAL_NOTICE}")
        print("installing the lane if needed (3 GB, ~3 min the first time) and its models")
        models = realvllm.prepare()
    if not is_up(paths):
        print("starting the local control plane (first run builds Kubernetes from Go modules)")
        up(paths)
    cluster = LocalCluster.attach(paths)
    print(
        f"cluster ready in {time.monotonic() - started:.0f}s; Prometheus {cluster.prometheus_url}"
    )
    install_crds(cluster)
    restart_operator(cluster)
    cluster.kubectl("create", "namespace", args.namespace)
    name = f"llama-8b-{args.scenario}"
    cluster.kubectl("delete", "sdr", name, "-n", args.namespace, "--ignore-not-found", "--wait")
    rollout = Rollout(cluster, args.namespace, name)
    if models is not None:
        realvllm.apply_model_volume(cluster, args.namespace, models)
    with ExitStack() as stack:
        extra = None
        if args.scenario in MIRROR_SCENARIOS:
            extra = stack.enter_context(mirror_setup(cluster, args.namespace, name))
        rollout.apply(scenario_manifest(args.scenario))
        print(f"applied SpecDecodeRollout {args.namespace}/{name} (scenario: {args.scenario})")
        ended = watch(rollout, DEMO_TIMEOUT_SECONDS, extra)
        if extra is not None:
            print(extra())
    print(f"\nverdict: {ended['status']['phase']} after {time.monotonic() - started:.0f}s")
    if args.scenario in REJECTED_BY_A_GATE:
        failed = gates_with_verdict(ended, "Failed")
        print("failed gates: " + ("; ".join(failed) or "none (this candidate must fail a gate)"))
    if models is not None:
        print(f"(real vLLM: {REAL_NOTICE})")
    print(
        "\nlook around:\n"
        f"  source {paths.env_file}\n"
        f"  kubectl get sdr -n {args.namespace}\n"
        f"  kubectl describe sdr {name} -n {args.namespace}\n"
        f"  kubectl get deploy,pods -n {args.namespace}\n"
        f"  curl -s {cluster.prometheus_url}/api/v1/query --data-urlencode "
        "'query=vllm:spec_decode_num_accepted_tokens_total'\n"
        "stop everything:\n  make cluster-down"
    )
    return 0 if as_expected(args.scenario, ended) else 1


if __name__ == "__main__":
    sys.exit(main())
