"""A small kubelet HTTPS endpoint so `kubectl logs [-p] [--tail N] [-f]` works.

The API server proxies `pods/log` to `https://<node InternalIP>:<daemonEndpoints port>/
containerLogs/<ns>/<pod>/<container>`; without `--kubelet-certificate-authority` it does not
verify the kubelet's certificate, so a self-signed one made at start is enough. Only
container logs and /healthz are served; exec, attach and port-forward are not.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from .logs import log_path
from .state import read_state

FOLLOW_POLL_SECONDS = 0.2


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A serving certificate for 127.0.0.1 (made once, kept in the state folder)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    cert_path, key_path = folder / "kubelet.crt", folder / "kubelet.key"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localcluster-node-agent")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_path.touch(mode=0o600)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


class KubeletHandler(BaseHTTPRequestHandler):
    """Serves /containerLogs/... from the agent's log files."""

    server: KubeletServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        """Route: /healthz or /containerLogs/<ns>/<pod>/<container>."""
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")
        if url.path == "/healthz":
            self._send(200, b"ok")
        elif len(parts) == 4 and parts[0] == "containerLogs":
            self._logs(parts[1], parts[2], parts[3], parse_qs(url.query))
        else:
            self._send(404, b"not served by the local node agent\n")

    def _logs(self, namespace: str, pod: str, container: str, query: dict[str, list[str]]) -> None:
        previous = query.get("previous", ["false"])[0] == "true"
        path = log_path(self.server.state_dir, namespace, pod, container, previous)
        if not path.exists():
            what = "previous terminated" if previous else "current"
            self._send(404, f"no {what} log for {namespace}/{pod}/{container}\n".encode())
            return
        data = path.read_bytes()
        if "tailLines" in query:
            count = int(query["tailLines"][0])
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[-count:]) if count > 0 else b""
        if "limitBytes" in query:
            data = data[: int(query["limitBytes"][0])]
        if query.get("follow", ["false"])[0] != "true" or previous:
            self._send(200, data)
            return
        self._follow(path, data, self.server.state_dir / "pods" / namespace / pod, container)

    def _follow(self, path: Path, first: bytes, pod_dir: Path, container: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        offset = path.stat().st_size
        self._chunk(first)
        while True:
            time.sleep(FOLLOW_POLL_SECONDS)
            try:
                with path.open("rb") as stream:
                    stream.seek(offset)
                    more = stream.read()
            except FileNotFoundError:
                more = b""
            offset += len(more)
            if more and not self._chunk(more):
                return
            state = read_state(pod_dir) or {}
            if (state.get("containers") or {}).get(container, {}).get("pid") is None:
                break
        self._chunk(b"")

    def _chunk(self, data: bytes) -> bool:
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except OSError:
            return False
        return True

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the API server polls logs often enough to flood the agent's log."""
        del format, args


class KubeletServer(ThreadingHTTPServer):
    """The HTTPS server; `port` is what the Node advertises in daemonEndpoints."""

    daemon_threads = True

    def __init__(self, state_dir: Path, host: str = "127.0.0.1") -> None:
        super().__init__((host, 0), KubeletHandler)
        self.state_dir = state_dir
        cert, key = _self_signed(state_dir / "kubelet")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.socket = context.wrap_socket(self.socket, server_side=True)

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.server_address[1])

    def start(self) -> None:
        """Serve in a daemon thread."""
        threading.Thread(target=self.serve_forever, name="kubelet-api", daemon=True).start()
