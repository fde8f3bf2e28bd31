"""The worker process: a uvloop running one `LoadWorker`, talking to the main process.

Messages (pickled over a multiprocessing pipe): main -> worker `("endpoints", [Endpoint])`
and `("stop",)`; worker -> main `("block", worker, LatencyBlock, sent, output_tokens,
cap_reached)` at every block boundary and `("done", worker)` at the end. A closed pipe
means the main process is gone: the worker stops. Signals are the main process's
business (it forwards a stop), so the worker ignores SIGINT and SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from multiprocessing.connection import Connection

import uvloop

from specdecode.domain.observations import LatencyBlock
from specdecode_load.probe import ProbeReader
from specdecode_load.worker import LoadWorker, WorkerSpec


def worker_process_main(
    spec: WorkerSpec,
    control: Connection,
    probe_fd: int,
    drain_seconds: float,
    main_ends: list[int] | None = None,
) -> None:
    """Entry point of a worker process (multiprocessing target). `main_ends` are file
    descriptors inherited from the main process that the worker must not hold open."""
    for fd in main_ends or ():
        with contextlib.suppress(OSError):
            os.close(fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    uvloop.run(_run(spec, control, probe_fd, drain_seconds))


async def _run(spec: WorkerSpec, control: Connection, probe_fd: int, drain: float) -> None:
    loop = asyncio.get_running_loop()

    def ship(block: LatencyBlock, worker: LoadWorker) -> None:
        schedule = worker.schedule
        message = ("block", spec.worker, block, schedule.sent, schedule.output_tokens)
        try:
            control.send((*message, schedule.cap_reached))
        except OSError:
            worker.stop()  # the main process is gone

    worker = LoadWorker(spec, ship)

    def on_control() -> None:
        try:
            message = control.recv()
        except (EOFError, OSError):
            loop.remove_reader(control.fileno())
            worker.stop()
            return
        if message[0] == "endpoints":
            worker.set_endpoints(list(message[1]))
        elif message[0] == "stop":
            worker.stop()

    loop.add_reader(control.fileno(), on_control)
    probe_pipe = os.fdopen(probe_fd, "rb", buffering=0)
    probe, _ = await loop.connect_read_pipe(lambda: ProbeReader(worker.recorder), probe_pipe)
    try:
        await worker.run(drain)
    finally:
        probe.close()
        loop.remove_reader(control.fileno())
    with contextlib.suppress(OSError):
        control.send(("done", spec.worker))
