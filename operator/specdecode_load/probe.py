"""The delay probe: how late a worker's loop notices bytes that are waiting for it.

Why an I/O probe, not a timer: uvloop's timers have millisecond resolution. The main
process writes a monotonic stamp to a pipe every ~10 ms; the worker reads it like any
socket and records arrival minus stamp in the block's `client_delay` sketch.
"""

from __future__ import annotations

import asyncio
import os
import struct
import time

from specdecode_load.recorder import BlockRecorder

PROBE_INTERVAL_SECONDS = 0.010
_STAMP = struct.Struct("<d")


class ProbeReader(asyncio.Protocol):
    """The worker's end: stamps every probe at arrival, like a chunk."""

    def __init__(self, recorder: BlockRecorder) -> None:
        self._recorder = recorder
        self._partial = b""

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        buffer = self._partial + data if self._partial else data
        whole = len(buffer) - len(buffer) % _STAMP.size
        for (stamp,) in _STAMP.iter_unpack(buffer[:whole]):
            self._recorder.delay(now, now - stamp)
        self._partial = buffer[whole:]


class ProbeWriter:
    """The main process's end: a stamp to every worker pipe every PROBE_INTERVAL_SECONDS."""

    def __init__(self, fds: list[int]) -> None:
        self._fds = fds
        for fd in fds:
            os.set_blocking(fd, False)
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Begin writing stamps on the running loop."""
        self._tick()

    def _tick(self) -> None:
        for fd in self._fds:
            try:
                os.write(fd, _STAMP.pack(time.perf_counter()))
            except BlockingIOError:
                pass  # the worker is far behind; its next read shows it anyway
            except OSError:
                continue  # the worker exited; the main process notices on its control pipe
        self._handle = asyncio.get_running_loop().call_later(PROBE_INTERVAL_SECONDS, self._tick)

    def stop(self) -> None:
        """Stop writing."""
        if self._handle is not None:
            self._handle.cancel()
