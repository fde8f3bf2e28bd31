"""Fencing holds only if no request outlives the margin between the fence and a take-over.

A client that stops waiting cannot recall a request it sent, so the operator's requests
carry the API server's own deadline (its `timeout` parameter: the server abandons a request,
a write included, it could not finish in time), and the settings refuse a lease whose margin
a request could outlive: connect attempts plus that deadline, kopf's requests included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from specdecode.adapters.kube.client import Deadlines, Fence, GuardedApiClient
from specdecode.settings import OperatorSettings

pytestmark = pytest.mark.unit


class Sent(Exception):
    """Stands in for the answer: the request reached the transport."""


def recording(deadlines: Deadlines, urls: list[str]) -> GuardedApiClient:
    api = GuardedApiClient(client.Configuration(host="http://127.0.0.1:9"), deadlines, Fence())

    def request(method: str, url: str, **kwargs: Any) -> Any:
        urls.append(url)
        raise Sent

    api.rest_client.request = request  # type: ignore[method-assign,assignment]
    return api


def test_every_request_but_a_watch_carries_the_servers_deadline() -> None:
    urls: list[str] = []
    api = recording(OperatorSettings().api_deadlines(), urls)
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    calls: list[Callable[[], Any]] = [
        lambda: core.read_namespaced_service("llama", "team-a"),
        lambda: core.list_namespaced_pod("team-a", label_selector="a=b"),
        lambda: custom.patch_namespaced_custom_object_status(
            "specdecode.io", "v1alpha1", "team-a", "specdecoderollouts", "r", {"status": {}}
        ),
        lambda: core.delete_namespaced_pod("p", "team-a"),
        lambda: core.list_namespaced_pod("team-a", watch=True),
    ]
    for call in calls:
        with pytest.raises(Sent):
            call()
    *writes_and_reads, watch = urls
    assert all(url.endswith("timeout=5s") for url in writes_and_reads), writes_and_reads
    assert "?label_selector" not in urls[1] and "labelSelector=a%3Db&timeout=5s" in urls[1]
    assert "timeout=" not in watch.replace("timeoutSeconds", "")


def test_without_a_server_deadline_the_url_is_left_alone() -> None:
    """The control: the client's default Deadlines name none (the Lease's own client)."""
    urls: list[str] = []
    with pytest.raises(Sent):
        client.CoreV1Api(recording(Deadlines(), urls)).read_namespaced_service("l", "t")
    assert "timeout" not in urls[0]


def test_the_default_settings_fence_and_the_old_deadlines_would_not() -> None:
    settings = OperatorSettings()
    assert settings.fencing_problem() is None
    assert settings.request_lifetime_seconds() < settings.lease_renew_seconds
    # What the operator ran with before: 5 s connects (retried twice) and a 30 s read, and
    # kopf's 60 s requests: a write could land 45-65 s after the fence, long after take-over.
    old = dataclasses.replace(settings, api_connect_seconds=5.0, api_request_seconds=30.0)
    problem = old.fencing_problem()
    assert problem is not None and "SPECDECODE_API_REQUEST_SECONDS" in problem


def test_a_lease_too_short_to_renew_is_refused() -> None:
    settings = OperatorSettings(lease_duration_seconds=20.0, lease_renew_seconds=10.0)
    problem = settings.fencing_problem()
    assert problem is not None and "leaves no time to renew" in problem


def test_the_request_deadline_is_read_from_the_environment() -> None:
    settings = OperatorSettings.from_env({"SPECDECODE_API_REQUEST_SECONDS": "3"})
    assert settings.api_deadlines() == Deadlines(connect=2.0, read=4.0, server=3.0)


def test_the_deadline_sent_is_the_one_checked() -> None:
    """The review's repro: 5.9 s passed the check (lifetime 9.9 s) but `timeout=6s` was sent
    (10 s, the whole margin); now the value checked is the value sent."""
    settings = OperatorSettings(api_request_seconds=5.9)
    assert settings.fencing_problem() is None
    urls: list[str] = []
    with pytest.raises(Sent):
        client.CoreV1Api(recording(settings.api_deadlines(), urls)).read_namespaced_service(
            "l", "t"
        )
    assert urls[0].endswith("timeout=5.9s")
    assert OperatorSettings(api_request_seconds=6.0).fencing_problem() is not None
    assert OperatorSettings(api_request_seconds=0.0).fencing_problem() is not None
