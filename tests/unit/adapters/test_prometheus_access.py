"""Prometheus is reached with TLS verified (the system's CAs, or the given bundle) and,
when configured, a bearer token read from its file on every request (tokens rotate)."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from specdecode.adapters.metrics.access import PrometheusAccess, prometheus_session
from specdecode.settings import OperatorSettings

pytestmark = pytest.mark.unit


def test_verification_is_on_unless_turned_off() -> None:
    assert prometheus_session(None).verify is True
    assert prometheus_session(PrometheusAccess(ca_file="/etc/ca.pem")).verify == "/etc/ca.pem"
    assert prometheus_session(PrometheusAccess(insecure_skip_verify=True)).verify is False


def test_the_bearer_token_is_read_on_every_request(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    session = prometheus_session(PrometheusAccess(bearer_token_file=str(token)))
    query = requests.Request("GET", "https://prometheus:9090/api/v1/query")
    assert session.prepare_request(query).headers["Authorization"] == "Bearer first"
    token.write_text("rotated")
    assert session.prepare_request(query).headers["Authorization"] == "Bearer rotated"
    assert "Authorization" not in prometheus_session(None).prepare_request(query).headers


def test_settings_from_the_charts_environment() -> None:
    settings = OperatorSettings.from_env(
        {
            "SPECDECODE_PROMETHEUS_CA_FILE": "/etc/specdecode/prometheus-ca/ca.crt",
            "SPECDECODE_PROMETHEUS_BEARER_TOKEN_FILE": "/var/run/token",
            "SPECDECODE_PROMETHEUS_INSECURE_SKIP_VERIFY": "false",
        }
    )
    assert settings.prometheus_ca_file == "/etc/specdecode/prometheus-ca/ca.crt"
    assert settings.prometheus_bearer_token_file == "/var/run/token"
    assert settings.prometheus_insecure_skip_verify is False
    assert OperatorSettings.from_env({}).prometheus_ca_file is None
