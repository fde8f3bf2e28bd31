"""The load path is authenticated: one token per rollout, in a Secret the rollout owns.

The Secret is made before the first load pod (which reads it at start), each pod gets it
from its environment, and every report request and endpoint push carries it; after a
restart the operator reads it back once. A Secret of that name the rollout does not own
is never used. The load pod's server refuses a control request without it (401).
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from load_fakes import OWNER, PLAN, SPEC, FakeCore, report, runtime

from specdecode.adapters.kube.findings import Found
from specdecode.adapters.kube.load_token import (
    LoadTokenError,
    ensure_load_token,
    usable_load_token,
)
from specdecode.adapters.load.pods import token_secret_name
from specdecode.api.status import Phase, SpecDecodeRolloutStatus
from specdecode.domain.apply_findings import with_foreign_children
from specdecode.domain.decision import Decision, DesiredChildren
from specdecode.domain.load_report import TOKEN_ENV
from specdecode.reconciler.load import observe_load_pods, read_windows, sync_load_pods
from specdecode.reconciler.observe import state_of
from specdecode.reconciler.status_boundary import status_of
from specdecode_load import httpserver

pytestmark = pytest.mark.unit

ROLLOUT = "team-a/llama-8b"


async def test_every_control_request_carries_the_rollouts_token() -> None:
    core = FakeCore()
    headers: list[str | None] = []

    def pods_answer(request: httpx.Request) -> httpx.Response:
        headers.append(request.headers.get("Authorization"))
        side = "baseline" if request.url.host.startswith("10.1.0") else "candidate"
        return httpx.Response(200, content=json.dumps(report(side)))

    rt = runtime(core, pods_answer)
    await sync_load_pods(rt, OWNER, SPEC, PLAN, [])
    secret_name = token_secret_name(OWNER.name)
    assert core.calls.index(f"create secret {secret_name}") < min(
        i for i, call in enumerate(core.calls) if call.startswith("create llama-8b")
    )
    secret = core.secrets[secret_name]
    assert secret["metadata"]["ownerReferences"] == [OWNER.reference()]
    token = secret["stringData"]["token"]
    assert len(token) >= 40
    for pod in core.pods.values():
        (env,) = pod["spec"]["containers"][0]["env"]
        assert env["name"] == TOKEN_ENV
        assert env["valueFrom"]["secretKeyRef"] == {"name": secret_name, "key": "token"}

    restarted = runtime(core, pods_answer)  # a new process: nothing in memory
    pods = observe_load_pods(restarted, "team-a", "llama-8b")
    await read_windows(restarted, ROLLOUT, PLAN, pods, 100.0, 110.0, OWNER.uid)
    assert headers == [f"Bearer {token}"] * 2
    assert core.calls.count(f"get secret {secret_name}") == 2  # at creation, after restart
    await read_windows(restarted, ROLLOUT, PLAN, pods, 110.0, 120.0, OWNER.uid)
    assert core.calls.count(f"get secret {secret_name}") == 2  # kept in memory


def test_a_secret_of_that_name_the_rollout_does_not_own_is_never_used() -> None:
    core = FakeCore()
    core.secrets[token_secret_name(OWNER.name)] = {
        "metadata": {"ownerReferences": [{"uid": "somebody-else"}]},
        "stringData": {"token": "known-to-somebody-else"},
    }
    with pytest.raises(LoadTokenError, match="not this rollout's load token"):
        ensure_load_token(SimpleNamespace(core=core), OWNER)  # type: ignore[arg-type]
    assert not any(call.startswith("create") for call in core.calls)


async def test_a_token_read_that_finds_a_foreign_secret_reports_why_and_uses_none() -> None:
    """The apply hears why (its finding); an observation, which does not write, does not."""
    core = FakeCore()
    core.secrets[token_secret_name(OWNER.name)] = {
        "metadata": {"ownerReferences": [{"uid": "somebody-else"}]},
        "stringData": {"token": "known-to-somebody-else"},
    }
    clients: Any = SimpleNamespace(core=core)
    heard: list[str] = []
    assert await usable_load_token(clients, {}, ROLLOUT, OWNER.uid, heard.append) is None
    assert len(heard) == 1 and "not this rollout's load token" in heard[0]
    assert await usable_load_token(clients, {}, ROLLOUT, OWNER.uid) is None


async def test_a_foreign_secret_in_the_tokens_place_makes_the_rollout_degraded() -> None:
    """No load pod starts (it would read another object's token); the rollout says
    Degraded ChildNotOwned naming the Secret, and recovers once the Secret is gone. The
    finding goes to status (`applyFindings`): a restarted operator, with nothing in
    memory, shows the same condition (control: kept in memory, the fresh process's
    decision dropped Degraded until its next apply)."""
    core = FakeCore()
    name = token_secret_name(OWNER.name)
    core.secrets[name] = {
        "metadata": {"ownerReferences": [{"uid": "somebody-else"}]},
        "stringData": {"token": "known-to-somebody-else"},
    }
    rt = runtime(core, lambda request: httpx.Response(500))
    found = Found()
    await sync_load_pods(rt, OWNER, SPEC, PLAN, [], found)
    assert not core.pods and not any(call.startswith("create") for call in core.calls)
    old = state_of(
        SpecDecodeRolloutStatus(phase=Phase.ANALYZING, apply_findings=found.merged(None))
    )
    now = datetime(2026, 1, 1, tzinfo=UTC)
    decision = with_foreign_children(old, Decision(old, DesiredChildren(None)), now)
    degraded = next(c for c in decision.status.conditions if c.type == "Degraded")
    assert degraded.reason == "ChildNotOwned" and f"Secret team-a/{name}" in degraded.message
    del core.secrets[name]  # the user deletes it
    restarted = runtime(core, lambda request: httpx.Response(500))
    found = Found()
    await sync_load_pods(restarted, OWNER, SPEC, PLAN, [], found)
    assert core.pods and found.merged(status_of(old).apply_findings) is None
    cleared = old.model_copy(update={"apply_findings": None})
    assert with_foreign_children(cleared, Decision(cleared, DesiredChildren(None)), now).status == (
        cleared
    )


async def _ask(port: int, path: str, token: str | None) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    writer.close()
    return status


async def test_a_load_pod_answers_control_requests_with_its_token_only() -> None:
    def handler(method: str, target: str, body: bytes) -> tuple[int, Any]:
        return 200, {"ok": True}

    server = await httpserver.serve_http("127.0.0.1", 0, handler, token="s3cret")
    port = server.sockets[0].getsockname()[1]
    try:
        assert await _ask(port, "/v1/report?since=0", "s3cret") == 200
        assert await _ask(port, "/v1/report?since=0", None) == 401
        assert await _ask(port, "/v1/endpoints", "guess") == 401
        assert await _ask(port, "/healthz", None) == 200  # the kubelet's probe
    finally:
        server.close()
