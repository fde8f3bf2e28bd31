"""Who makes a stream arrive in bursts: the reader, the server or the engine, starved in turn.

Near-zero chunk gaps (`domain/bursts.py` refuses a side with over 5 % under 1 ms) could come
from the server writing late steps together or from the reader reading late. This reads a
running OpenAI-compatible server (real vLLM: see docs/real-vllm.md) with the real load
client (`burst_floor.read`) under four conditions: quiet; one busy process per core at the
same priority; a busy process per core and the client at nice 19 (the reader starved: no
core left idle for it); one busy process and the given server processes at nice 19
(`--starve PID`, e.g. vLLM's API server or its `VLLM::EngineCore`), restored afterwards.
Prints the gap count, the median and the shares under 0.1 and 1 ms per condition.

    .venv/bin/python benchmarks/burst_cause.py --port 8123 --model target [--streams 4 8]
        [--starve PID ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import burst_floor  # a sibling script, not a package

HOG = "while True: pass"


def hogs(count: int) -> list[subprocess.Popen[bytes]]:
    """`count` busy processes at the default priority."""
    return [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(count)]


def probe(port: int, streams: int, model: str, nice: int) -> str:
    """One read in a child process (so its priority can be lowered alone)."""
    here = str(Path(__file__).resolve().parent)
    code = (
        f"import asyncio, sys; sys.path.insert(0, {here!r}); import burst_cause as b; "
        f"print(asyncio.run(b.shares({port}, {streams}, {model!r})))"
    )
    argv = ["nice", "-n", str(nice), sys.executable, "-c", code]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


async def shares(port: int, streams: int, model: str) -> str:
    """The chunk gaps of `streams` streams, 6 requests each, 64-token answers."""
    gaps = await burst_floor.read(port, streams, 1, 64, streams * 6, model=model)
    total = max(gaps.total, 1)
    median = gaps.quantile(0.5) * 1e3 if gaps.total else float("nan")
    return (
        f"gaps {gaps.total:>5}  median {median:7.2f} ms  "
        f"<0.1 ms {burst_floor.under(gaps, 1e-4) / total:6.1%}  "
        f"<1 ms {burst_floor.under(gaps, 1e-3) / total:6.1%}"
    )


def starved(pids: list[int], level: int) -> None:
    """Set the priority of the server processes named."""
    for pid in pids:
        os.setpriority(os.PRIO_PROCESS, pid, level)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="target")
    parser.add_argument("--streams", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--starve", type=int, nargs="*", default=[])
    args = parser.parse_args()
    cores = os.cpu_count() or 2
    conditions: list[tuple[str, int, int, list[int]]] = [
        ("quiet", 0, 0, []),
        ("a busy process per core", cores, 0, []),
        ("reader starved (nice 19, a busy process per core)", cores, 19, []),
    ]
    if args.starve:
        conditions.append((f"server {args.starve} starved", 1, 0, args.starve))
    for label, busy, nice, starve in conditions:
        running = hogs(busy)
        starved(starve, 19)
        try:
            for streams in args.streams:
                read = probe(args.port, streams, args.model, nice)
                print(f"{label:<52} {streams:>3} streams  {read}")
        finally:
            starved(starve, 0)
            for hog in running:
                hog.kill()


if __name__ == "__main__":
    main()
