"""`specdecode-load`: the shadow load of one side and shard, in its own pod.

Exit codes: 0 after SIGTERM (or SIGINT) and a clean drain, 1 when a worker process died,
2 on bad input (flags, endpoints, a prompt set whose line N does not parse).
"""

from __future__ import annotations

import logging
import sys

from specdecode_load.config import parse_config
from specdecode_load.pod import run_pod


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, start the pod, return its exit code."""
    config = parse_config(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        return run_pod(config)
    except ValueError as error:  # e.g. a damaged state dir
        logging.getLogger("specdecode_load").error("%s", error)
        return 2


if __name__ == "__main__":
    sys.exit(main())
