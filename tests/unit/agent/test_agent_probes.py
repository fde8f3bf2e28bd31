"""Probe state machine (fake results, fake time) and the real HTTP/TCP checks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from localcluster.agent.probes import ProbeSpec, ProbeTracker, check, resolve_port

pytestmark = pytest.mark.unit


def spec(**fields: object) -> ProbeSpec:
    return ProbeSpec.from_dict({"httpGet": {"path": "/healthz", "port": 8000}, **fields})


def test_defaults_follow_kubernetes() -> None:
    parsed = spec()
    assert (parsed.period, parsed.timeout, parsed.success_threshold, parsed.failure_threshold) == (
        10.0,
        1.0,
        1,
        3,
    )


def test_initial_delay_and_period_schedule_checks() -> None:
    tracker = ProbeTracker(spec(initialDelaySeconds=5, periodSeconds=2), started_at=100.0, ok=False)
    assert not tracker.due(104.9)
    assert tracker.due(105.0)
    tracker.record(True, now=105.0)
    assert not tracker.due(106.9) and tracker.due(107.0)


def test_readiness_needs_success_threshold_in_a_row() -> None:
    tracker = ProbeTracker(spec(successThreshold=2, failureThreshold=2), started_at=0.0, ok=False)
    assert tracker.record(True, 1.0) is False
    assert tracker.record(False, 2.0) is False
    assert tracker.record(True, 3.0) is False
    assert tracker.record(True, 4.0) is True
    assert tracker.record(False, 5.0) is True  # one failure is below the threshold
    assert tracker.record(False, 6.0) is False


def test_liveness_flips_after_failure_threshold() -> None:
    tracker = ProbeTracker(spec(failureThreshold=3), started_at=0.0, ok=True)
    assert tracker.record(False, 1.0) and tracker.record(False, 2.0)
    assert not tracker.has_failed
    assert tracker.record(False, 3.0) is False
    assert tracker.has_failed


def test_named_ports_resolve_from_container_ports() -> None:
    ports = [{"name": "http", "containerPort": 8000}]
    assert resolve_port("http", ports) == 8000
    assert resolve_port("8080", ports) == 8080
    assert resolve_port(9000, ports) == 9000
    assert resolve_port("metrics", ports) is None


class Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/ok" else 503)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture
def server() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield int(httpd.server_address[1])
    httpd.shutdown()


def test_http_check_success_status_and_refused(server: int) -> None:
    ports = [{"name": "web", "containerPort": server}]
    ok = ProbeSpec.from_dict({"httpGet": {"path": "/ok", "port": "web"}})
    bad = ProbeSpec.from_dict({"httpGet": {"path": "/bad", "port": server}})
    assert check(ok, "127.0.0.1", ports) == (True, "")
    success, message = check(bad, "127.0.0.1", ports)
    assert not success and "503" in message
    tcp = ProbeSpec.from_dict({"tcpSocket": {"port": server}})
    assert check(tcp, "127.0.0.1", ports)[0]
    refused, _ = check(ProbeSpec.from_dict({"tcpSocket": {"port": 1}}), "127.0.0.1", ports)
    assert not refused
