"""Stand-in for registry.k8s.io/pause: sleep until SIGTERM or SIGINT, then exit 0."""

from __future__ import annotations

import signal
import sys
import threading


def main() -> int:
    """Block until asked to stop, as the pause container does."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
