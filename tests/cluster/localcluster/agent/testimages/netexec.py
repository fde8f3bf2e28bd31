"""Stand-in for `agnhost netexec`: a tiny HTTP server on the pod's own IP (stdlib only).

Endpoints: `/` (time), `/hostname` (pod name), `/healthz`, `/echo?msg=`, `/clientip`,
`/metrics` (a valid Prometheus text exposition so scrapes work) and `/exit?code=N`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Netexec(BaseHTTPRequestHandler):
    """Request handler; the server object carries the pod name and a request counter."""

    server: NetexecServer

    def do_GET(self) -> None:
        """Serve the agnhost-like endpoints."""
        url = urlparse(self.path)
        query = parse_qs(url.query)
        self.server.count_request()
        if url.path == "/":
            self._reply(200, f"NOW: {time.strftime('%Y-%m-%d %H:%M:%S')}")
        elif url.path == "/hostname":
            self._reply(200, self.server.pod_name)
        elif url.path == "/healthz":
            self._reply(200, "ok")
        elif url.path == "/echo":
            self._reply(200, query.get("msg", [""])[0])
        elif url.path == "/clientip":
            self._reply(200, f"{self.client_address[0]}:{self.client_address[1]}")
        elif url.path == "/metrics":
            self._reply(200, self.server.metrics(), "text/plain; version=0.0.4")
        elif url.path == "/exit":
            code = int(query.get("code", ["0"])[0])
            self._reply(200, f"exiting with {code}")
            sys.stdout.flush()
            threading.Timer(0.05, os._exit, args=(code,)).start()
        else:
            self._reply(404, "not found")

    def _reply(self, status: int, body: str, content_type: str = "text/plain") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Log requests to stdout, which the node agent keeps as the container log."""
        print(f"{self.address_string()} {format % args}", flush=True)


class NetexecServer(ThreadingHTTPServer):
    """HTTP server that knows its pod name and counts requests for /metrics."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], pod_name: str) -> None:
        super().__init__(address, Netexec)
        self.pod_name = pod_name
        self._requests = 0
        self._lock = threading.Lock()

    def count_request(self) -> None:
        """Count a request (thread-safe) for the exposition."""
        with self._lock:
            self._requests += 1

    def metrics(self) -> str:
        """A minimal Prometheus text exposition."""
        with self._lock:
            served = self._requests
        return (
            "# HELP netexec_requests_total HTTP requests served by this netexec stand-in.\n"
            "# TYPE netexec_requests_total counter\n"
            f"netexec_requests_total {served}\n"
        )


def main(argv: list[str] | None = None) -> int:
    """Parse agnhost-style flags (unknown ones are ignored) and serve until SIGTERM."""
    parser = argparse.ArgumentParser(prog="netexec")
    parser.add_argument("--host", default=os.environ.get("SPECDECODE_BIND_HOST", "127.0.0.1"))
    parser.add_argument("--pod-name", default=os.environ.get("HOSTNAME", "netexec"))
    parser.add_argument("--http-port", type=int, default=8080)
    options, _ = parser.parse_known_args(argv)
    server = NetexecServer((options.host, options.http_port), options.pod_name)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"netexec serving on {options.host}:{options.http_port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
