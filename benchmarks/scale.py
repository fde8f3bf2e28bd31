"""Scale benchmark of the controller: what N idle rollouts cost the API server and the node.

Why: an operator in a shared cluster is judged by what it costs when nothing happens. For
10, 50 and 200 rollouts (cumulative: 40 and then 150 are added) this prints
- API requests per second of the operator's ServiceAccount in steady state, from the API
  server's audit log, by verb and resource (target for 200: < 0.5/s in all, zero writes);
- the operator's CPU (share of one core) and RSS over the same window (< 5 %, < 300 MiB);
- `kubectl apply` (a create) to children created (Deployment and Service seen by a
  watch), p50 / p99 (< 2 s);
- an action annotation to its effect (the annotation consumed) with the default 5 s
  interval and 600 s resync, p50 / max (< 2 s).

How: on the local cluster (`make cluster-up`). A second node agent registers fake 8-GPU
nodes (`scale-gpu-*`) for the engines; engine pods run the stand-in image
(`engine-standin`: /health only, ~12 MiB each) instead of the simulator. The operator runs
as a local process under its own ServiceAccount (bound to cluster-admin: requests are
counted here, RBAC is tested elsewhere), watching only the benchmark namespace, with its
default intervals; timing starts once one warm-up rollout has had its children (and is
gone). Rollouts run plain decoding, so each goes straight to Promoted: the steady state of
a fleet whose analyses have finished.

Run: ``PYTHONPATH=tests/cluster .venv/bin/python benchmarks/scale.py [--sizes 10,50,200]
[--window 120] [--operators 1]``. With ``--operators 2`` two replicas run with leader
election and the Lease's own requests are reported on their own line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from localcluster.extra_nodes import STANDIN_IMAGE, ExtraGpuNodes
from localcluster.handle import LocalCluster
from localcluster.operator_process import install_crds
from localcluster.ports import pick_free_ports
from localcluster.process import start_component, stop_processes, wait_until_ready
from localcluster.waiting import wait_for

NAMESPACE = "sd-scale"
ACCOUNT = "scale-operator"
POOL_LABEL = {"specdecode.dev/pool": "scale"}
ACTION = "specdecode.io/action"
WRITES = {"create", "update", "patch", "delete", "deletecollection"}
ACTION_SAMPLES = 10
WARM_UP = "warm-up"


def kubectl_ok(cluster: LocalCluster, *args: str, stdin: str | None = None) -> str:
    result = cluster.kubectl(*args, input=stdin, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def rollout(name: str) -> dict[str, Any]:
    """A plain-decoding rollout on the scale pool with the stand-in engine."""
    return {
        "apiVersion": "specdecode.io/v1alpha1",
        "kind": "SpecDecodeRollout",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "gpuPool": {"nodeSelector": POOL_LABEL},
            "engine": {"image": STANDIN_IMAGE},
            "serving": {"replicas": 1},
        },
    }


class LineWatch:
    """`kubectl get -w` in the background; records when each line was first seen."""

    def __init__(self, cluster: LocalCluster, resource: str, columns: str) -> None:
        argv = [str(cluster.bin_dir / "kubectl"), "get", resource, "-n", NAMESPACE, "-w"]
        argv += ["--no-headers", "-o", f"custom-columns={columns}"]
        self.process = subprocess.Popen(
            argv, env=cluster.env(), stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.seen: list[tuple[float, list[str]]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._lock:
                self.seen.append((time.monotonic(), line.split()))

    def first(self, match: Any, after: float = 0.0) -> float | None:
        with self._lock:
            return next((t for t, cols in self.seen if t >= after and match(cols)), None)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def audit_requests(cluster: LocalCluster, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """The operator account's requests received in [start, end), one record per request."""
    user = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
    seen: dict[str, dict[str, Any]] = {}
    for path in sorted(cluster.audit_log.parent.glob("audit*.log")):
        with path.open() as lines:
            for line in lines:
                if user not in line:
                    continue
                record = json.loads(line)
                if record.get("user", {}).get("username") != user:
                    continue
                received = datetime.fromisoformat(record["requestReceivedTimestamp"])
                if start <= received < end:
                    seen.setdefault(record["auditID"], record)
    return list(seen.values())


class Bench:
    """The namespace, the extra nodes and agent, the operator(s) and the measurements."""

    def __init__(
        self, cluster: LocalCluster, operators: int, window: float, verbose: bool = False
    ) -> None:
        self.cluster, self.operators, self.window = cluster, operators, window
        self.verbose = verbose
        self.children: list[subprocess.Popen[bytes]] = []
        self.nodes: ExtraGpuNodes | None = None
        self.created: dict[str, float] = {}

    def set_up(self, most_rollouts: int) -> None:
        """Namespace, account, GPU nodes for the largest size at once (the agent that runs
        them is not restarted between sizes), then the operator(s)."""
        # Leftovers of an interrupted run would be counted as this run's. Their rollouts
        # keep kopf's finalizer with no operator to remove it: drop it, or the namespace
        # never goes.
        leftovers = self.cluster.kubectl("get", "sdr", "-n", NAMESPACE, "-o", "name").stdout
        for name in leftovers.split():
            self.cluster.kubectl(
                "patch", name, "-n", NAMESPACE, "--type=merge",
                "-p", '{"metadata":{"finalizers":null}}',
            )  # fmt: skip
        self.cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", timeout=600)
        binding = f"clusterrolebinding/{NAMESPACE}-{ACCOUNT}"
        self.cluster.kubectl("delete", binding, "--ignore-not-found")
        self.nodes = ExtraGpuNodes(self.cluster, most_rollouts, pool="scale")
        install_crds(self.cluster)
        kubectl_ok(self.cluster, "create", "namespace", NAMESPACE)
        kubectl_ok(self.cluster, "create", "serviceaccount", ACCOUNT, "-n", NAMESPACE)
        kubectl_ok(
            self.cluster, "create", "clusterrolebinding", f"{NAMESPACE}-{ACCOUNT}",
            "--clusterrole=cluster-admin", f"--serviceaccount={NAMESPACE}:{ACCOUNT}",
        )  # fmt: skip
        kubeconfig = self.cluster.kubeconfig_for_service_account(NAMESPACE, ACCOUNT)
        for index in range(self.operators):
            self.children.append(self._start_operator(kubeconfig, index))
        self._warm_up()

    def _warm_up(self) -> None:
        """One rollout through to its Deployment, then gone: the operator is watching.

        Its liveness endpoint answers before kopf has listed and watched everything, so
        rollouts created at once would time the operator's start-up, not its reaction.
        """
        kubectl_ok(self.cluster, "create", "-f", "-", stdin=json.dumps(rollout(WARM_UP)))
        wait_for(
            lambda: (
                self.cluster.kubectl("get", "deployment", WARM_UP, "-n", NAMESPACE).returncode == 0
            ),
            timeout=120,
            interval=0.5,
            message="the warm-up rollout's Deployment",
        )
        kubectl_ok(self.cluster, "delete", "sdr", WARM_UP, "-n", NAMESPACE, "--timeout=120s")

    def _start_operator(self, kubeconfig: Path, index: int) -> subprocess.Popen[bytes]:
        ports = pick_free_ports(["metrics", "health"])
        health = f"http://127.0.0.1:{ports['health']}/healthz"
        executable = shutil.which("specdecode-operator", path=str(Path(sys.executable).parent))
        argv = [executable or "specdecode-operator", "--kubeconfig", str(kubeconfig)]
        argv += ["--namespace", NAMESPACE, "--metrics-port", str(ports["metrics"])]
        argv += ["--prometheus-url", self.cluster.prometheus_url]
        env = {
            "SPECDECODE_METRICS_HOST": "127.0.0.1",
            "SPECDECODE_LIVENESS_ENDPOINT": health,
            "POD_NAME": f"scale-operator-{index}",
            "POD_NAMESPACE": NAMESPACE,
        }
        if self.operators > 1:
            argv.append("--leader-elect")
        if self.verbose:
            argv.append("--verbose")
        component = f"operator-scale-{index}"
        child = start_component(self.cluster.paths, component, argv, extra_env=env)

        def alive() -> bool:
            import urllib.request

            with urllib.request.urlopen(health, timeout=2):
                return True

        log = self.cluster.paths.log_file(component)
        wait_until_ready(component, child, alive, 60.0, log)
        return child

    def grow_to(self, total: int) -> list[float]:
        """Create rollouts up to `total`; seconds from each create to its children."""
        deployments = LineWatch(self.cluster, "deployments", "NAME:.metadata.name")
        services = LineWatch(self.cluster, "services", "NAME:.metadata.name")
        names = [f"r{i:03d}" for i in range(len(self.created), total)]
        for name in names:
            self.created[name] = time.monotonic()
            kubectl_ok(self.cluster, "create", "-f", "-", stdin=json.dumps(rollout(name)))
        latencies = []
        for name in names:

            def both(n: str = name) -> float | None:
                d = deployments.first(lambda cols: cols[:1] == [n])
                s = services.first(lambda cols: cols[:1] == [n])
                return max(d, s) if d is not None and s is not None else None

            seen = wait_for(both, timeout=300, interval=0.2, message=f"children of {name}")
            latencies.append(seen - self.created[name])
        deployments.stop()
        services.stop()
        wait_for(lambda: self._settled() >= total, timeout=900, interval=3, message="settled")
        return latencies

    def _settled(self) -> int:
        """Rollouts Promoted with production Ready: nothing left for the operator to do."""
        out = kubectl_ok(
            self.cluster, "get", "sdr", "-n", NAMESPACE, "-o",
            'jsonpath={range .items[*]}{.status.phase}/'
            '{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
        )  # fmt: skip
        return out.split().count("Promoted/True")

    def steady_state(self) -> dict[str, Any]:
        """Requests, CPU and RSS over the window, after a settle time."""
        time.sleep(10)  # let the last watch events and their reconciles pass
        pids = [child.pid for child in self.children]
        cpu_before = sum(cpu_seconds(pid) for pid in pids)
        start, started = datetime.now(UTC), time.monotonic()
        time.sleep(self.window)
        elapsed = time.monotonic() - started
        cpu = (sum(cpu_seconds(pid) for pid in pids) - cpu_before) / elapsed
        end = datetime.now(UTC)
        time.sleep(2)  # the audit log is written asynchronously
        records = audit_requests(self.cluster, start, end)
        lease = [r for r in records if r.get("objectRef", {}).get("resource") == "leases"]
        rest = [r for r in records if r not in lease]
        by_kind = Counter(
            f"{r['verb']} {r.get('objectRef', {}).get('resource', '?')}" for r in rest
        )
        return {
            "requests_per_s": len(rest) / elapsed,
            "writes": sum(1 for r in rest if r["verb"] in WRITES),
            "lease_per_s": len(lease) / elapsed,
            "by_kind": dict(by_kind.most_common()),
            "cpu_share": cpu,
            "rss_mib": sum(rss_mib(pid) for pid in pids),
            "elapsed": elapsed,
        }

    def action_latencies(self) -> list[float]:
        """Annotate idle rollouts with an action; seconds until the operator consumed it."""
        watch = LineWatch(
            self.cluster,
            "sdr",
            "NAME:.metadata.name,ACTION:.metadata.annotations.specdecode\\.io/action",
        )
        latencies = []
        for name in list(self.created)[:ACTION_SAMPLES]:
            time.sleep(1.0)  # apart, so each sample is a lone event on an idle operator
            sent = time.monotonic()
            kubectl_ok(self.cluster, "annotate", "sdr", name, "-n", NAMESPACE, f"{ACTION}=retry")
            done = wait_for(
                lambda n=name, t=sent: watch.first(lambda c: c == [n, "<none>"], after=t),
                timeout=60,
                interval=0.1,
                message=f"action on {name} consumed",
            )
            latencies.append(done - sent)
        watch.stop()
        return latencies

    def tear_down(self) -> None:
        """Rollouts first, while the operator still runs: each carries kopf's finalizer,
        which only a running operator removes (else the namespace stays Terminating)."""
        try:
            self.cluster.kubectl(
                "delete", "sdr", "--all", "-n", NAMESPACE, "--timeout=300s", timeout=330
            )  # fmt: skip
        finally:  # an operator that died leaves them: the next run's set-up drops them
            stop_processes([child.pid for child in self.children])
            self.cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
            self.cluster.kubectl("delete", "clusterrolebinding", f"{NAMESPACE}-{ACCOUNT}")
            if self.nodes is not None:
                self.nodes.close()


def report(size: int, created: list[float], steady: dict[str, Any], actions: list[float]) -> None:
    print(f"\n## {size} rollouts (steady window {steady['elapsed']:.0f} s)")
    print("| measure | value | target |")
    print("|---|---|---|")
    print(
        f"| API requests/s (operator, no Lease) | {steady['requests_per_s']:.3f} | < 0.5 at 200 |"
    )
    print(f"| writes in the window | {steady['writes']} | 0 |")
    if steady["lease_per_s"]:
        print(f"| Lease requests/s (leader election) | {steady['lease_per_s']:.3f} | |")
    print(f"| operator CPU (share of one core) | {100 * steady['cpu_share']:.2f} % | < 5 % |")
    print(f"| operator RSS | {steady['rss_mib']:.0f} MiB | < 300 MiB |")
    if created:
        p50, p99 = percentile(created, 0.5), percentile(created, 0.99)
        print(
            f"| create to children, p50 / p99 (n={len(created)}) "
            f"| {p50:.2f} / {p99:.2f} s | < 2 s |"
        )
    if actions:
        p50, worst = statistics.median(actions), max(actions)
        print(
            f"| action to effect, p50 / max (n={len(actions)}) "
            f"| {p50:.2f} / {worst:.2f} s | < 2 s |"
        )
    for kind, count in steady["by_kind"].items():
        print(f"| &nbsp; {kind} | {count} | |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10,50,200")
    parser.add_argument("--window", type=float, default=120.0, help="steady-state seconds")
    parser.add_argument("--operators", type=int, default=1, help="2: leader election")
    parser.add_argument("--verbose", action="store_true", help="operator logs at DEBUG")
    options = parser.parse_args(argv)
    bench = Bench(LocalCluster.attach(), options.operators, options.window, options.verbose)
    try:
        sizes = [int(s) for s in options.sizes.split(",")]
        bench.set_up(max(sizes))
        for size in sizes:
            created = bench.grow_to(size)
            steady = bench.steady_state()
            actions = bench.action_latencies()
            report(size, created, steady, actions)
    finally:
        bench.tear_down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
