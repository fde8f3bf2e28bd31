"""Engine endpoints are pushed to a load pod only when they differ from those it uses.

A load pod echoes its endpoints in every report; the operator compares against the echo
(and what it pushed since), so one change means one push, not one every refresh. The
engines' addresses come from the watched pod cache, so a change is pushed at the reconcile
its watch event causes. A pod that does not echo (an older image) is compared with its
start-up arguments and pushed again on a timer (`UNECHOED_PUSH_SECONDS`), not at every
reconcile.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from load_fakes import ENGINE_IPS, OWNER, PLAN, SPEC, FakeCore, report, runtime

from specdecode.domain.load_report import ReportError, report_from_wire, report_to_wire
from specdecode.reconciler.load import observe_load_pods, read_windows, sync_load_pods
from specdecode.reconciler.runtime import Runtime

pytestmark = pytest.mark.unit

ROLLOUT = "team-a/llama-8b"
STARTED_WITH = {"10.1.1.1": ["http://10.2.0.2:8000"], "10.1.0.1": ["http://10.2.0.1:8000"]}


class LoadPods:
    """The two load pods (one per side) over HTTP: endpoints they use, pushes received."""

    def __init__(self, echo: bool) -> None:
        self.echo = echo
        self.using = {host: list(urls) for host, urls in STARTED_WITH.items()}
        self.pushes: list[tuple[str, list[str]]] = []

    def restart(self) -> None:
        """The containers restart: back to their start-up arguments."""
        self.using = {host: list(urls) for host, urls in STARTED_WITH.items()}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        if request.method == "POST":
            urls = json.loads(request.content)["urls"]
            self.pushes.append((host, urls))
            self.using[host] = urls
            return httpx.Response(200, json={"urls": urls})
        side = "baseline" if host.startswith("10.1.0") else "candidate"
        wire = report(side)
        if self.echo:
            wire["endpoints"] = self.using[host]
        return httpx.Response(200, json=wire)


@pytest.fixture(autouse=True)
def engines_back_in_place() -> Iterator[None]:
    before = dict(ENGINE_IPS)
    yield
    ENGINE_IPS.update(before)


async def _started(pods: LoadPods) -> tuple[Runtime, FakeCore]:
    core = FakeCore()
    rt = runtime(core, pods)
    await sync_load_pods(rt, OWNER, SPEC, PLAN, [])  # creates them with today's endpoints
    return rt, core


async def _reconcile(rt: Runtime) -> None:
    """A reconcile moments after the last (e.g. the engine pod's watch event)."""
    await sync_load_pods(rt, OWNER, SPEC, PLAN, observe_load_pods(rt, "team-a", "llama-8b"))


async def _refresh(rt: Runtime) -> None:
    """A reconcile after the timer of pods without a known echo ran out."""
    rt.load_cache.unechoed_pushed_at.clear()
    await _reconcile(rt)


async def _look(rt: Runtime) -> None:
    pods = observe_load_pods(rt, "team-a", "llama-8b")
    await read_windows(rt, ROLLOUT, PLAN, pods, since=100.0, now=110.0)


async def test_one_endpoint_change_is_pushed_once_to_a_pod_that_echoes() -> None:
    pods = LoadPods(echo=True)
    rt, _ = await _started(pods)
    await _look(rt)
    await _refresh(rt)
    assert pods.pushes == []  # nothing changed: nothing pushed
    ENGINE_IPS["candidate"] = "10.2.0.9"  # the candidate engine pod was replaced
    for _ in range(4):
        await _refresh(rt)
    assert pods.pushes == [("10.1.1.1", ["http://10.2.0.9:8000"])]
    await _look(rt)  # the echo now confirms the new list
    await _refresh(rt)
    assert len(pods.pushes) == 1


async def test_a_pod_that_restarted_with_its_old_arguments_is_pushed_again() -> None:
    pods = LoadPods(echo=True)
    rt, _ = await _started(pods)
    await _look(rt)
    ENGINE_IPS["candidate"] = "10.2.0.9"
    await _refresh(rt)
    pods.restart()
    await _look(rt)  # it says it uses its start-up endpoints again
    await _refresh(rt)
    await _refresh(rt)
    assert [urls for _, urls in pods.pushes] == [["http://10.2.0.9:8000"]] * 2


async def test_control_a_pod_that_does_not_echo_is_pushed_at_every_refresh() -> None:
    pods = LoadPods(echo=False)
    rt, _ = await _started(pods)
    await _look(rt)
    ENGINE_IPS["candidate"] = "10.2.0.9"
    for _ in range(3):
        await _refresh(rt)
        await _look(rt)
    assert [host for host, _ in pods.pushes] == ["10.1.1.1"] * 3


async def test_a_moved_engine_is_pushed_at_the_next_reconcile_without_waiting() -> None:
    pods = LoadPods(echo=True)
    rt, _ = await _started(pods)
    await _look(rt)
    await _reconcile(rt)  # starts no timer: nothing differed
    ENGINE_IPS["baseline"] = "10.2.0.7"  # the watch delivers the new engine pod
    await _reconcile(rt)
    assert pods.pushes == [("10.1.0.1", ["http://10.2.0.7:8000"])]


async def test_a_pod_without_echo_is_pushed_on_the_timer_not_at_every_reconcile() -> None:
    pods = LoadPods(echo=False)
    rt, _ = await _started(pods)
    await _look(rt)
    ENGINE_IPS["candidate"] = "10.2.0.9"
    for _ in range(3):
        await _reconcile(rt)
        await _look(rt)
    assert len(pods.pushes) == 1
    await _refresh(rt)
    assert len(pods.pushes) == 2  # the control: once the timer ran out, pushed again


async def test_a_push_the_pod_did_not_take_is_retried_on_the_timer() -> None:
    pods = LoadPods(echo=True)
    refused: list[str] = []

    def refuse_pushes(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            refused.append(request.url.host)
            return httpx.Response(503)
        return pods(request)

    core = FakeCore()
    rt = runtime(core, refuse_pushes)
    await sync_load_pods(rt, OWNER, SPEC, PLAN, [])
    await _look(rt)
    ENGINE_IPS["candidate"] = "10.2.0.9"
    for _ in range(3):
        await _reconcile(rt)
    assert refused == ["10.1.1.1"]
    await _refresh(rt)
    assert refused == ["10.1.1.1"] * 2


def test_the_echo_round_trips_and_its_absence_reads_as_unknown() -> None:
    wire = report("candidate")
    assert "endpoints" not in wire and report_from_wire(wire).endpoints is None
    parsed = report_from_wire({**wire, "endpoints": ["http://10.2.0.2:8000"]})
    assert parsed.endpoints == ("http://10.2.0.2:8000",)
    assert report_to_wire(parsed)["endpoints"] == ["http://10.2.0.2:8000"]


@pytest.mark.parametrize("bad", ["http://x:1", [1, 2], {"urls": []}])
def test_a_malformed_echo_is_a_report_error(bad: Any) -> None:
    with pytest.raises(ReportError, match="endpoints"):
        report_from_wire({**report("candidate"), "endpoints": bad})
