"""The operator's own CPU and memory while rollouts analyse, as shadow concurrency grows.

Why: the operator sends no inference traffic any more (load pods do), so its cost must not
grow with the stages' concurrency: it asks each load pod for a report once per look and
the report's size depends on the latency spread, not on how many streams produced it.
This runs 4 rollouts at once on the local cluster, each in one long measuring stage at a
given concurrency, samples the operator process's CPU time and RSS from /proc over a
window, and prints one row per concurrency. The simulated engines run 10x slower than
real time HERE ONLY, so that 8 engines at concurrency 64 fit on a 2-core machine: this
measures the operator, whose work per look does not depend on the engines' speed.

Run (long, not in CI): ``PYTHONPATH=tests/cluster .venv/bin/python benchmarks/operator_load.py``
"""

from __future__ import annotations

import argparse
import os
import secrets
import time
from pathlib import Path
from typing import Any

from localcluster.handle import LocalCluster
from localcluster.manifests import load_example, merged
from localcluster.operator_process import OperatorProcess, install_crds
from localcluster.paths import ClusterPaths
from localcluster.rollouts import Rollout
from localcluster.shutdown import is_up
from localcluster.startup import up
from localcluster.waiting import wait_for

ROLLOUTS = 4
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def rollout_manifest(concurrency: int) -> dict[str, Any]:
    stage = {
        "name": "steady",
        "concurrency": concurrency,
        "warmupSeconds": 5,
        "minDurationSeconds": 3000,
        "maxDurationSeconds": 3600,
        "gates": [
            {"name": "p99", "type": "TailLatency", "itlDefinition": "PerChunk", "dryRun": True}
        ],
    }
    return merged(
        load_example(),
        {
            "spec": {
                "engine": {
                    "env": [
                        {"name": "SPECDECODE_SIM_GPU", "value": "H100"},
                        {"name": "SPECDECODE_SIM_TIME_SCALE", "value": "10"},
                    ]
                },
                "analysis": {"intervalSeconds": 5, "stages": [stage]},
            }
        },
    )


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 2**20


def measure(
    cluster: LocalCluster, operator: OperatorProcess, concurrency: int, window: float
) -> tuple[float, float, int, float]:
    namespace = f"bench-{concurrency}-{secrets.token_hex(3)}"
    cluster.kubectl("create", "namespace", namespace, check=True)
    rollouts = [Rollout(cluster, namespace, f"r{i}") for i in range(ROLLOUTS)]
    try:
        for r in rollouts:
            r.apply(rollout_manifest(concurrency))
        for r in rollouts:
            r.wait(
                lambda s: (s.get("stages") or [{}])[0].get("load", {}).get("requests", 0) > 0,
                timeout=300,
                message=f"{r.name} measuring",
            )
        assert operator.child is not None
        pid = operator.child.pid
        start_cpu, start = cpu_seconds(pid), time.monotonic()
        peak = 0.0
        while time.monotonic() - start < window:
            peak = max(peak, rss_mib(pid))
            time.sleep(1.0)  # a sampling period, not a wait for a condition
        used = (cpu_seconds(pid) - start_cpu) / (time.monotonic() - start)
        loads = [r.status()["stages"][0]["load"] for r in rollouts]
        delay = max(load.get("clientDelayP99Ms") or 0.0 for load in loads)
        return used, peak, sum(load["requests"] for load in loads), delay
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--window", type=float, default=60.0, help="seconds sampled per row")
    args = parser.parse_args()
    paths = ClusterPaths.default()
    if not is_up(paths):
        up(paths)
    cluster = LocalCluster.attach(paths)
    install_crds(cluster)
    operator = OperatorProcess(cluster, reconcile_interval=5.0).start()
    try:
        print(
            f"{ROLLOUTS} rollouts analysing at once; operator sampled {args.window:.0f} s per row"
        )
        print(
            "| concurrency per engine | operator CPU (cores) | operator RSS peak (MiB) "
            "| requests in windows | worst load-client delay P99 (ms) |"
        )
        print("|---|---|---|---|---|")
        for concurrency in args.concurrency:
            cpu, rss, requests, delay = measure(cluster, operator, concurrency, args.window)
            print(f"| {concurrency} | {cpu:.3f} | {rss:.0f} | {requests} | {delay:.2f} |")
            wait_for(
                lambda: (
                    not cluster.kubectl(
                        "get", "pods", "-A", "-l", "specdecode.io/role=shadow-load", "-o", "name"
                    ).stdout.strip()
                ),
                timeout=120,
                message="load pods of the previous row gone",
            )
    finally:
        operator.stop()


if __name__ == "__main__":
    main()
