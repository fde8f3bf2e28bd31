"""Benchmark of the local cluster: build time, warm `up` to ready, memory at rest.

Why these three: a cold build decides whether CI and newcomers can afford the harness,
`up` to ready is paid by every test session (target < 30 s), and resident memory decides
whether the operator, engines and Prometheus fit next to the control plane (target
< 1.5 GiB). The cluster measured here runs in a temporary state directory, so a developer's
running `.cluster` is left alone. Run: ``PYTHONPATH=tests/cluster python benchmarks/cluster.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from localcluster.binaries import BUILD_SCRIPT, ensure_binaries
from localcluster.paths import REPO_ROOT, STATE_DIR_ENV, ClusterPaths
from localcluster.process import find_marked_processes
from localcluster.shutdown import down
from localcluster.state import ClusterState

COLD_CACHE_MIB = 100


def build_times(bin_dir: Path) -> list[tuple[str, str]]:
    """Rows from build-times.txt, written by build-binaries.sh when it built ``bin_dir``.

    The build is only cold if Go's build cache was (nearly) empty when it started; the
    file records the cache size, so the table says which kind of build it measured.
    """
    record = bin_dir / "build-times.txt"
    if not record.exists():
        return [("build time", f"unknown (no {record.name} in {bin_dir})")]
    fields = dict(line.partition(" ")[::2] for line in record.read_text().splitlines())
    cache_mib = int(fields.pop("gocache_mib_before", "-1"))
    kind = "cold" if 0 <= cache_mib < COLD_CACHE_MIB else f"warm, GOCACHE had {cache_mib} MiB"
    rows = [(f"build of {bin_dir.name} ({kind})", f"started {fields.pop('started', '?')}")]
    total = fields.pop("total", None)
    rows += [(f"  build {name}", f"{seconds} s") for name, seconds in fields.items()]
    if total is not None:
        rows.append(("  build total (with module download)", f"{total} s"))
    return rows


def cold_build() -> list[tuple[str, str]]:
    """Build everything again with an empty GOCACHE (modules stay downloaded): a cold build.

    Takes many minutes on 2 cores and uses both; only run with ``--cold-build``.
    """
    with tempfile.TemporaryDirectory(prefix="cold-build-") as tmp:
        env = {**os.environ, "GOCACHE": f"{tmp}/gocache", "SPECDECODE_CACHE": f"{tmp}/cache"}
        result = subprocess.run(
            ["bash", str(BUILD_SCRIPT)], env=env, stdout=subprocess.PIPE, text=True, check=True
        )
        return build_times(Path(result.stdout.strip().splitlines()[-1]))


def rss_kib(pid: int) -> int:
    """Resident set size of one process in KiB (0 if it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def command_name(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return "?"
    words = [w.decode() for w in argv if w]
    if "-m" in words:
        return words[words.index("-m") + 1]
    return Path(words[0]).name if words else "?"


def run_up(paths: ClusterPaths) -> tuple[float, float]:
    """`python -m localcluster up` in ``paths``; (wall seconds, ready_seconds it reported)."""
    env = {**os.environ, STATE_DIR_ENV: str(paths.state_dir)}
    env["PYTHONPATH"] = str(REPO_ROOT / "tests" / "cluster")
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "localcluster", "up"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - began
    if result.returncode != 0:
        raise SystemExit(f"up failed:\n{result.stdout}\n{result.stderr}")
    state = ClusterState.load(paths)
    assert state is not None
    return wall, state.ready_seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="warm `up` runs to time")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds at rest before RSS")
    parser.add_argument(
        "--cold-build", action="store_true", help="also time a build with an empty GOCACHE"
    )
    args = parser.parse_args()
    bin_dir = ensure_binaries()
    rows = cold_build() if args.cold_build else build_times(bin_dir)
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as tmp:
        paths = ClusterPaths(Path(tmp) / ".cluster")
        try:
            walls, readies = [], []
            for _ in range(args.runs):
                wall, ready = run_up(paths)
                walls.append(wall)
                readies.append(ready)
                if len(walls) < args.runs:
                    down(paths)
            rows.append((f"warm `up` to ready, wall (median of {args.runs})",
                         f"{statistics.median(walls):.1f} s (runs: "
                         + ", ".join(f"{w:.1f}" for w in walls) + ")"))  # fmt: skip
            rows.append(("warm `up` to ready, as `up` reports it (median)",
                         f"{statistics.median(readies):.1f} s"))  # fmt: skip
            time.sleep(args.settle)  # a measurement window, not a synchronisation
            total = 0
            for pid in sorted(find_marked_processes(paths.state_dir)):
                kib = rss_kib(pid)
                total += kib
                rows.append((f"RSS {command_name(pid)} (pid {pid})", f"{kib / 1024:.0f} MiB"))
            rows.append((f"RSS total at rest ({args.settle:.0f} s after ready)",
                         f"{total / 1024:.0f} MiB ({total / 1024 / 1024:.2f} GiB)"))  # fmt: skip
            began = time.monotonic()
            down(paths)
            rows.append(("`down`", f"{time.monotonic() - began:.1f} s"))
        finally:
            down(paths)
    width = max(len(label) for label, _ in rows)
    print(f"{'measure':<{width}}  value\n{'-' * width}  {'-' * 30}")
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
