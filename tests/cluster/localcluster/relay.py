"""TCP relays from the pod network's host address to services that listen on 127.0.0.1.

Why: the API server and Prometheus listen on 127.0.0.1 only, and a pod inside the pod
network namespace (see podnetwork.py) cannot reach the host's loopback. A pod that talks to
them (the operator image) connects to ``<host veth address>:<same port>`` instead, and this
relay forwards each connection byte for byte to ``127.0.0.1:<port>``. TLS passes through
untouched (the API server's certificate names the host veth address too).

    python -m localcluster.relay --listen 10.244.7.1 --port 6443 --port 9090

The harness starts it as the component ``pod-relay`` (marked like every other component,
so `down` stops it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import sys

TARGET_HOST = "127.0.0.1"
CHUNK = 65536


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def _relay_one(
    port: int, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
) -> None:
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(TARGET_HOST, port)
    except OSError:
        client_writer.close()
        return
    try:
        await asyncio.gather(
            _pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer)
        )
    finally:
        for writer in (client_writer, upstream_writer):
            writer.close()


async def serve(listen: str, ports: list[int], stop: asyncio.Event) -> None:
    """Relay ``listen:<port>`` to ``127.0.0.1:<port>`` for every port until ``stop`` is set."""
    servers = []
    for port in ports:

        async def handle(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int = port
        ) -> None:
            await _relay_one(port, reader, writer)

        servers.append(await asyncio.start_server(handle, listen, port, reuse_address=True))
    print(f"relaying {listen}:{ports} -> {TARGET_HOST}", flush=True)
    await stop.wait()
    for server in servers:
        server.close()


async def _main(listen: str, ports: list[int]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await serve(listen, ports, stop)


def argv(listen: str, ports: list[int]) -> list[str]:
    """The command line the harness starts this relay with."""
    return [sys.executable, "-m", "localcluster.relay", "--listen", listen,
            *(f"--port={port}" for port in ports)]  # fmt: skip


def listening(address: str, port: int) -> bool:
    """Readiness: the relay accepts connections on ``address:port``."""
    with socket.create_connection((address, port), timeout=1):
        return True


def main(arguments: list[str] | None = None) -> int:
    """Parse options and relay until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m localcluster.relay", description=__doc__)
    parser.add_argument("--listen", required=True, help="address to listen on (host veth)")
    parser.add_argument("--port", type=int, action="append", required=True)
    options = parser.parse_args(arguments)
    asyncio.run(_main(options.listen, list(options.port)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
