"""How the operator reaches Prometheus: TLS verified (a CA bundle if given), a bearer token.

Why: a verdict is only as honest as the numbers Prometheus answers, and an unverified TLS
connection lets anything on the path answer instead. Verification is on unless turned off
explicitly (`insecure_skip_verify`, for a test server). The token is read from its file
on every request, as Kubernetes rotates projected ServiceAccount tokens in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import requests
from prometheus_api_client import PrometheusConnect
from requests.auth import AuthBase


@dataclass(frozen=True)
class PrometheusAccess:
    """TLS and authentication for the Prometheus HTTP API."""

    ca_file: str | None = None
    """PEM bundle of the CA(s) that sign Prometheus's certificate (default: the system's)."""
    bearer_token_file: str | None = None
    """A file holding a bearer token sent with every query (e.g. the ServiceAccount's)."""
    insecure_skip_verify: bool = False
    """Do not verify Prometheus's certificate (a test server only)."""


class _BearerFromFile(AuthBase):
    def __init__(self, path: str) -> None:
        self._path = Path(path)

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self._path.read_text().strip()}"
        return request


def prometheus_session(access: PrometheusAccess | None) -> requests.Session:
    """A requests session for prometheus-api-client, configured as `access` says."""
    access = access or PrometheusAccess()
    session = requests.Session()
    session.verify = False if access.insecure_skip_verify else (access.ca_file or True)
    if access.bearer_token_file:
        session.auth = _BearerFromFile(access.bearer_token_file)
    return session


class PrometheusReader:
    """What every Prometheus-backed source holds: the URL (named in its MetricErrors), the
    query timeout and one client configured by `PrometheusAccess`, built in one place so
    that no source can forget TLS verification or the token."""

    def __init__(
        self, url: str, timeout_seconds: float, access: PrometheusAccess | None = None
    ) -> None:
        self.url = url
        self._timeout = timeout_seconds
        self._client = PrometheusConnect(url=url, session=prometheus_session(access))

    def _instant(self, promql: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """An instant query's answer (`params`: `time` and the like), within the timeout."""
        rows: list[dict[str, Any]] = self._client.custom_query(
            promql, params=params, timeout=self._timeout
        )
        return rows

    def _range(
        self, promql: str, start: datetime, end: datetime, step_seconds: int
    ) -> list[dict[str, Any]]:
        """A range query's matrix over [start, end] every `step_seconds`, within the timeout."""
        rows: list[dict[str, Any]] = self._client.custom_query_range(
            promql, start_time=start, end_time=end, step=f"{step_seconds}s", timeout=self._timeout
        )
        return rows
