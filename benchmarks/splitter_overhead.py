"""The Mirror splitter as an instrument: what it adds to the gaps it measures, per side.

Why: under Splitter pairing one process receives the mirror, sends every request to both
shadows and times both streams, so its own loop is in every timestamp of both sides. This
runs an A/A pair: two identical reference engines (`specdecode_load.reference`, in their
own processes: one step loop, every chunk stamped with its send time from
CLOCK_MONOTONIC, step times a seeded list both cycle) behind one splitter process (the
real `Splitter`, fed through its real HTTP intake on loopback, keeping N mirrored
requests in flight), and reports per side:

- gap error: |measured gap - true gap| per chunk (consecutive chunks of one stream:
  (arrival_i - arrival_i-1) - (stamp_i - stamp_i-1)), P50 and P99;
- the measured P99 per-chunk ITL of each side, from the splitter's own blocks from the
  first whole block after the warm-up to the drained end, and the true P99 over the same
  span (the engines' /v1/truth, reset then); the A/A P99 difference between the sides,
  measured and true. An instrument that adds nothing measures the true difference.

Noisy on a shared machine: compare rows of one run. Not run in CI:

    .venv/bin/python benchmarks/splitter_overhead.py [--levels 8,32] [--seconds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import ClassVar

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instrument import MAX_TOKENS, start_servers, truth

from specdecode.domain.sketch import Sketch
from specdecode_load.connection import StreamConnection
from specdecode_load.mirror_intake import serve_mirror
from specdecode_load.pool import parse_endpoint
from specdecode_load.splitter import Splitter
from specdecode_load.splitter_config import SIDES, SplitterConfig

_STAMP = re.compile(rb'"t":([0-9.]+)')
WARMUP_SECONDS = 3.0


class GapErrorConnection(StreamConnection):
    """The splitter's connection plus the benchmark's reading of each chunk's send stamp:
    the error of every gap it measures against the engine's true gap, by side (port)."""

    errors: ClassVar[dict[str, Sketch]] = {}
    window = (0.0, 0.0)

    def _event(self, event: bytes, now: float) -> None:
        match = _STAMP.search(event)
        if match is not None:
            stamp = float(match.group(1))
            last = getattr(self, "_last_pair", None)
            start, end = GapErrorConnection.window
            if last is not None and last[2] == self._started and start <= now < end:
                error = abs((now - last[0]) - (stamp - last[1]))
                GapErrorConnection.errors.setdefault(self.url, Sketch()).add(error)
            self._last_pair = (now, stamp, self._started)
        super()._event(event, now)


async def run_level(ports: list[int], streams: int, seconds: float) -> dict[str, object]:
    """One level: `streams` mirrored requests kept in flight for `seconds` after warm-up."""
    config = SplitterConfig(
        endpoints={
            side: (parse_endpoint(f"http://127.0.0.1:{port}"),)
            for side, port in zip(SIDES, ports, strict=True)
        },
        max_in_flight=streams * 4, request_timeout=60.0, block_seconds=1.0, max_blocks=600,
        drain_seconds=10.0, listen_host="127.0.0.1", listen_port=0, mirror_port=0,
        stage=None, plan=None,
    )  # fmt: skip
    splitter = Splitter(config, connection_class=GapErrorConnection)
    splitter.start()
    probes = await splitter.start_probes()
    intake = await serve_mirror("127.0.0.1", 0, splitter.on_mirrored)
    reader, writer = await asyncio.open_connection("127.0.0.1", intake.sockets[0].getsockname()[1])
    GapErrorConnection.errors = {}
    t0 = time.perf_counter() + WARMUP_SECONDS
    GapErrorConnection.window = (t0, t0 + seconds)
    reset_at = None  # the truth is reset after the warm-up, at the first whole block
    seed = 0
    answered = 0
    while time.perf_counter() < t0 + seconds:
        if reset_at is None and time.perf_counter() >= t0 and time.time() % 1.0 < 0.05:
            for port in ports:
                truth(port, reset=True)
            reset_at = float(int(time.time()))  # the block that starts now
        for _ in range(streams - splitter.in_flight - (seed - answered)):
            message = {"role": "user", "content": "x"}
            fields = {"model": "ref", "max_tokens": MAX_TOKENS, "messages": [message]}
            body = json.dumps({**fields, "seed": seed}).encode()
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: s\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
            seed += 1
        while answered < seed:
            await reader.readuntil(b"\r\n\r\n")
            answered += 1
        await asyncio.sleep(0.002)  # the feeder's pace; not a wait for a condition
    writer.close()
    intake.close()
    await splitter.drain(config.drain_seconds)  # the last streams end, on both clocks
    truths = [truth(port, reset=False) for port in ports]
    probes.stop()
    assert reset_at is not None, "the run ended before its warm-up did"
    row: dict[str, object] = {"streams": streams}
    p99: dict[str, float] = {}
    for side, port, true in zip(SIDES, ports, truths, strict=True):
        blocks = [b for b in splitter.sides[side].collector.blocks if b.start >= reset_at]
        measured = Sketch()
        delay = Sketch()
        for block in blocks:
            measured.merge(block.per_chunk_itl)
            delay.merge(block.client_delay)
        errors = GapErrorConnection.errors.get(f"http://127.0.0.1:{port}", Sketch())
        true_p99 = Sketch.from_wire(true["perChunkItl"]).quantile(0.99)
        p99[side] = measured.quantile(0.99)
        row[side] = {
            "chunks": errors.total,
            "gap error P50 ms": errors.quantile(0.5) * 1e3,
            "gap error P99 ms": errors.quantile(0.99) * 1e3,
            "P99 measured ms": p99[side] * 1e3,
            "P99 true ms": true_p99 * 1e3,
            "loop delay P99 ms": delay.quantile(0.99) * 1e3,
        }
        row[f"true {side}"] = true_p99
    row["A/A P99 diff ms"] = (p99["candidate"] - p99["baseline"]) * 1e3
    true_diff = float(str(row["true candidate"])) - float(str(row["true baseline"]))
    row["true diff ms"] = true_diff * 1e3
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="8,32")
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    servers = start_servers(2)
    ports = [port for _, port in servers]
    print("| streams | side | chunks | gap error P50 ms | gap error P99 ms | P99 measured ms "
          "| P99 true ms | loop delay P99 ms | A/A P99 diff ms (measured / true) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for level in (int(value) for value in args.levels.split(",")):
        row = uvloop.run(run_level(ports, level, args.seconds))
        for side in SIDES:
            cells = row[side]
            assert isinstance(cells, dict)
            diff = f"{row['A/A P99 diff ms']:+.3f} / {row['true diff ms']:+.3f}"
            print(
                f"| {level} | {side} | {cells['chunks']:,} | {cells['gap error P50 ms']:.3f} "
                f"| {cells['gap error P99 ms']:.3f} | {cells['P99 measured ms']:.3f} "
                f"| {cells['P99 true ms']:.3f} | {cells['loop delay P99 ms']:.3f} | {diff} |"
            )
    for process, _ in servers:
        process.terminate()


if __name__ == "__main__":
    main()
