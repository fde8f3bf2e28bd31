"""`make demo`: a live speculative-decoding rollout on the local cluster, start to verdict.

    python -m localcluster.demo [--scenario promote|rollback] [--namespace demo]

Starts (or reuses) the local control plane, installs the CRD, runs the operator in the
background, applies examples/simulator/specdecode-rollout.yaml, and prints the gate table
each time the status changes until the rollout is Promoted or RolledBack. The `rollback`
scenario makes the simulated draft head weak (low acceptance), so the acceptance gate
must roll it back. Exits non-zero if the verdict is not the one the scenario expects.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from typing import Any

from localcluster.handle import LocalCluster
from localcluster.manifests import load_example, merged
from localcluster.operator_process import OperatorProcess, install_crds
from localcluster.paths import ClusterPaths
from localcluster.process import is_alive, read_pid, stop_processes
from localcluster.rollouts import Rollout
from localcluster.shutdown import is_up
from localcluster.startup import up
from specdecode.report import gate_table

ENDINGS = {"Promoted", "RolledBack", "Failed"}
EXPECTED = {"promote": "Promoted", "rollback": "RolledBack"}
WEAK_DRAFT_HEAD = [{"name": "SPECDECODE_SIM_ACCEPTANCE", "value": "0.35"}]
DEMO_TIMEOUT_SECONDS = 900


def scenario_manifest(scenario: str) -> dict[str, Any]:
    """The simulator example, or its weak-draft-head variant."""
    manifest = load_example()
    if scenario == "rollback":
        env = list(manifest["spec"]["engine"].get("env", [])) + WEAK_DRAFT_HEAD
        manifest = merged(manifest, {"spec": {"engine": {"env": env}}})
    return manifest


def restart_operator(cluster: LocalCluster) -> None:
    """Run a fresh operator in the background (one left by an earlier demo may be stale)."""
    pid = read_pid(cluster.paths, "operator")
    if pid is not None and is_alive(pid):
        stop_processes([pid])
    process = OperatorProcess(cluster, reconcile_interval=2.0).start()
    assert process.child is not None
    print(f"operator started (pid {process.child.pid}), log: {process.log_file}")


def watch(rollout: Rollout, timeout: float) -> str:
    """Print the gate table whenever it changes; return the final phase."""
    deadline = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < deadline:
        document = rollout.get()
        table = gate_table(document, now=datetime.now(UTC))
        if table != shown:
            print(f"\n--- {datetime.now(UTC):%H:%M:%S}\n{table}", flush=True)
            shown = table
        phase = (document.get("status") or {}).get("phase")
        if phase in ENDINGS:
            return str(phase)
        time.sleep(1.0)  # a terminal refresh rate, not a wait for a condition
    return "Timeout"


def main(argv: list[str] | None = None) -> int:
    """Run the demo; 0 when the verdict is the one the scenario expects."""
    parser = argparse.ArgumentParser(prog="localcluster.demo", description=__doc__)
    parser.add_argument("--scenario", choices=sorted(EXPECTED), default="promote")
    parser.add_argument("--namespace", default="demo")
    args = parser.parse_args(argv)

    paths = ClusterPaths.default()
    started = time.monotonic()
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
    rollout.apply(scenario_manifest(args.scenario))
    print(f"applied SpecDecodeRollout {args.namespace}/{name} (scenario: {args.scenario})")

    final = watch(rollout, DEMO_TIMEOUT_SECONDS)
    print(f"\nverdict: {final} after {time.monotonic() - started:.0f}s")
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
    return 0 if final == EXPECTED[args.scenario] else 1


if __name__ == "__main__":
    sys.exit(main())
