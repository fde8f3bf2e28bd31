"""A TCP proxy in front of the API server that can stop forwarding: a hung API server.

Why: a leader whose API connection hangs (a partition, an overloaded API server) is the
case leader election must survive, and killing a process does not produce it. A replica
given `kubeconfig_through(...)` talks to the API server only through this proxy; after
`freeze()` every connection, open or new, stays open and silent in both directions
(nothing is refused, nothing answers), as a hung server looks to its clients.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path
from urllib.parse import urlparse

import yaml

CHUNK = 65536


class HungProxy:
    """Forwards 127.0.0.1:<port> to the API server until frozen."""

    def __init__(self, apiserver_url: str) -> None:
        target = urlparse(apiserver_url)
        self._target = (target.hostname or "127.0.0.1", target.port or 443)
        self._frozen = threading.Event()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        """The API server's URL through the proxy (its certificate names 127.0.0.1)."""
        return f"https://127.0.0.1:{self.port}"

    def kubeconfig_through(self, kubeconfig: Path, into: Path) -> Path:
        """A copy of `kubeconfig` whose clusters point at the proxy."""
        config = yaml.safe_load(kubeconfig.read_text())
        for entry in config["clusters"]:
            entry["cluster"]["server"] = self.url
        into.write_text(yaml.safe_dump(config))
        return into

    def freeze(self) -> None:
        """Stop forwarding anything, on every connection, open or new; close none."""
        self._frozen.set()

    def close(self) -> None:
        """Drop every connection and stop listening."""
        self._closed.set()
        for sock in [self._listener, *self._sockets]:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            self._sockets.append(downstream)
            if self._frozen.is_set():
                continue  # accepted, never answered
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                downstream.close()
                continue
            upstream.settimeout(None)
            self._sockets.append(upstream)
            for source, sink in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(CHUNK):
                if self._frozen.is_set():
                    self._closed.wait()  # hold the bytes: the server never sees them
                    return
                sink.sendall(data)
