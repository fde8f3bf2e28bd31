"""Deadlines and fencing: one leader even when the API server hangs.

Every request of the operator's clients carries a connect and read deadline, and none
leaves the process once the fence is closed. A leader whose renewal hangs closes the
fence and cancels its reconcile loops before any standby may take the Lease over: a full
lease duration after the last renewal that succeeded was sent.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest
from kubernetes import client

from specdecode.adapters.kube.client import Deadlines, Fence, Fenced, GuardedApiClient
from specdecode.handlers.leadership import fence_at, run_when_leading
from specdecode.settings import OperatorSettings

pytestmark = pytest.mark.unit


class Sent(Exception):
    """Stands in for the answer: the request reached the transport."""


def guarded(fence: Fence, seen: list[Any]) -> GuardedApiClient:
    api = GuardedApiClient(client.Configuration(host="http://127.0.0.1:9"), Deadlines(), fence)

    def request(method: str, url: str, **kwargs: Any) -> Any:
        seen.append((method, kwargs.get("_request_timeout")))
        raise Sent

    api.rest_client.request = request  # type: ignore[method-assign,assignment]
    return api


def test_every_request_has_a_deadline_unless_it_names_its_own() -> None:
    seen: list[Any] = []
    core = client.CoreV1Api(guarded(Fence(), seen))
    with pytest.raises(Sent):
        core.read_namespaced_service("llama", "team-a")
    with pytest.raises(Sent):
        core.read_namespaced_service("llama", "team-a", _request_timeout=(1, 2))
    assert seen == [("GET", (5.0, 30.0)), ("GET", (1, 2))]


def test_nothing_is_sent_once_the_fence_is_closed() -> None:
    seen: list[Any] = []
    fence = Fence()
    core = client.CoreV1Api(guarded(fence, seen))
    with pytest.raises(Sent):
        core.read_namespaced_service("llama", "team-a")
    fence.close()
    with pytest.raises(Fenced):
        core.delete_namespaced_service("llama", "team-a")
    assert [method for method, _ in seen] == ["GET"]


class HangingElector:
    """Grants the Lease, renews `good` times, then hangs (an API server that stopped
    answering) until the test lets it go. Records when each successful request was sent."""

    def __init__(self, good: int) -> None:
        self.good, self.leading, self.abandoned = good, False, False
        self.succeeded_sent: list[float] = []
        self.hung = threading.Event()
        self.let_go = threading.Event()

    def try_acquire_or_renew(self) -> bool:
        sent = time.monotonic()
        if self.leading and len(self.succeeded_sent) > self.good:
            self.hung.set()
            self.let_go.wait(10)
            raise TimeoutError("read timed out")
        self.leading = True
        self.succeeded_sent.append(sent)
        return True

    def abandon(self) -> None:
        self.abandoned, self.leading = True, False

    def release(self) -> None:
        raise AssertionError("a fenced leader must never release the Lease")


async def test_a_leader_whose_renewal_hangs_stops_before_a_standby_may_take_over() -> None:
    # Seconds, not tenths: with a 0.6 s lease a CI run whose 2 cores were saturated by the
    # other unit tests fenced the leader before its renewal hung (a thread-pool hop late by
    # 0.45 s), so the control below failed. The fence now needs a 2.25 s stall to fire early.
    settings = OperatorSettings(
        leader_election=True,
        lease_duration_seconds=3.0,
        lease_renew_seconds=0.75,
        lease_retry_seconds=0.05,
        metrics_port=0,
    )
    elector = HangingElector(good=2)
    fence = Fence()
    acted: list[float] = []

    async def operator(stop_flag: asyncio.Event) -> None:
        while True:  # a reconcile loop that does not look at the stop flag
            acted.append(time.monotonic())
            await asyncio.sleep(0.005)

    try:
        run = run_when_leading(settings, elector, operator, None, fence=fence)  # type: ignore[arg-type]
        code = await asyncio.wait_for(run, 20)
    finally:
        elector.let_go.set()
    assert elector.hung.is_set()  # the control: the renewal did hang
    assert code == 1 and fence.closed and elector.abandoned
    last_renewal = elector.succeeded_sent[-1]
    standby_may_take_over = last_renewal + settings.lease_duration_seconds
    assert acted[-1] < standby_may_take_over
    assert acted[-1] >= fence_at(settings, last_renewal) - 0.25  # it led until the fence


async def test_a_fenced_replica_sends_no_http_request_either() -> None:
    fence, sent = Fence(), []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        return httpx.Response(200)

    hooks = {"request": [fence.refuse_http]}
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer), event_hooks=hooks) as http:
        await http.post("http://10.1.0.1:8090/v1/endpoints")
        fence.close()
        with pytest.raises(Fenced):
            await http.post("http://10.1.0.1:8090/v1/endpoints")
    assert sent == ["/v1/endpoints"]
