"""`specdecode-load`: the shadow load of one side and shard, in its own pod; `specdecode-load
split ...`: the shadow splitter of a Mirror stage (`splitter`), same image and instrument.

Exit codes: 0 after SIGTERM (or SIGINT) and a clean drain, 1 when a worker process died,
2 on bad input (flags, endpoints, a prompt set whose line N does not parse).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from multiprocessing.connection import Connection

import uvloop

from specdecode_load.config import LoadConfig, parse_config
from specdecode_load.pod import Pod
from specdecode_load.process import worker_process_main
from specdecode_load.splitter import run_splitter
from specdecode_load.splitter_config import parse_splitter_config


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, start the pod (or, with `split`, the shadow splitter), return its
    exit code."""
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args[:1] == ["split"]:
        return uvloop.run(run_splitter(parse_splitter_config(args[1:])))
    config = parse_config(args)
    try:
        return run_pod(config)
    except ValueError as error:  # e.g. a damaged state dir
        logging.getLogger("specdecode_load").error("%s", error)
        return 2


def run_pod(config: LoadConfig) -> int:
    """Start the worker processes, then serve until they are done."""
    pod = Pod(config)
    context = multiprocessing.get_context("fork")  # before any loop or thread exists
    controls: dict[int, Connection] = {}
    probe_fds: list[int] = []
    processes = []
    for spec in pod.specs():
        parent, child = context.Pipe()
        read_fd, write_fd = os.pipe()
        # the main process's ends, this worker's and earlier ones': the worker closes its
        # copies so that the main process's exit reads as end-of-file on its control pipe
        main_ends = [parent.fileno(), write_fd, *probe_fds]
        main_ends += [control.fileno() for control in controls.values()]
        args = (spec, child, read_fd, config.drain_seconds, main_ends)
        process = context.Process(target=worker_process_main, args=args, daemon=True)
        process.start()
        child.close()
        os.close(read_fd)
        controls[spec.worker], probe_fds = parent, [*probe_fds, write_fd]
        processes.append(process)
    code = uvloop.run(pod.serve(controls, probe_fds))
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
    return code


if __name__ == "__main__":
    sys.exit(main())
