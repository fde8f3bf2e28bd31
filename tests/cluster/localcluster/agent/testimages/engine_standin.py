"""Stand-in engine for scale benchmarks: answers /health and /metrics, does nothing else.

`benchmarks/scale.py` runs hundreds of rollouts; a simulated vLLM per pod would measure
the simulator, not the operator. This process takes `vllm serve` arguments, listens on
`--port` at the pod's address (SPECDECODE_STANDIN_BIND_HOST) and answers 200 to every GET,
so readiness probes pass and the Deployment becomes Ready.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Healthy(BaseHTTPRequestHandler):
    """200 with an empty body to every GET (health, metrics)."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        del format, args  # silent: probes every few seconds would fill the log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8000)
    options, _ = parser.parse_known_args(argv)
    host = os.environ.get("SPECDECODE_STANDIN_BIND_HOST", "127.0.0.1")
    server = ThreadingHTTPServer((host, options.port), Healthy)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop.wait()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
