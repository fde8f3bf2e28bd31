"""The operator's side of the load pods, against a fake API server and fake load pods.

sync_load_pods makes the rollout's load pods exactly the stage run's (creating only after
the prompt set parsed, deleting only what exists); read_windows turns the pods' HTTP
reports into one window per side, and a pod that answers garbage into a metric Error.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
import pytest
from load_fakes import OWNER, PLAN, SPEC, FakeCore, report, runtime, with_prompts

from specdecode.adapters.load.pods import plan_hash, render_load_pods
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.observations import ChildRole, LatencySamples, MetricError
from specdecode.reconciler.load import observe_load_pods, read_windows, sync_load_pods

pytestmark = pytest.mark.unit

ROLLOUT = "team-a/llama-8b"


async def test_sync_creates_the_run_pods_then_deletes_them_when_the_plan_ends() -> None:
    core = FakeCore()
    rt = runtime(core)
    await sync_load_pods(rt, OWNER, SPEC, PLAN, observe_load_pods(rt, "team-a", "llama-8b"))
    assert sorted(core.pods) == sorted(p.name for p in render_load_pods(OWNER, SPEC, PLAN, {}, "x"))
    (pod,) = [
        p
        for p in core.pods.values()
        if p["metadata"]["labels"]["specdecode.io/side"] == "candidate"
    ]
    assert "http://10.2.0.2:8000" in pod["spec"]["containers"][0]["args"]
    core.calls.clear()
    pods = observe_load_pods(rt, "team-a", "llama-8b")
    await sync_load_pods(rt, OWNER, SPEC, PLAN, pods)
    assert core.calls == []  # converged: no writes (and the fake has no API to list with)
    await sync_load_pods(rt, OWNER, SPEC, None, pods)
    assert not core.pods
    core.calls.clear()
    await sync_load_pods(rt, OWNER, SPEC, None, observe_load_pods(rt, "team-a", "llama-8b"))
    assert core.calls == []  # nothing to delete: no DELETE of absent pods


async def test_a_new_stage_run_replaces_the_old_pods() -> None:
    core = FakeCore()
    rt = runtime(core)
    await sync_load_pods(rt, OWNER, SPEC, PLAN, [])
    rerun = TrafficPlan(**{**PLAN.__dict__, "started_at": datetime(2026, 1, 2, tzinfo=UTC)})
    await sync_load_pods(rt, OWNER, SPEC, rerun, observe_load_pods(rt, "team-a", "llama-8b"))
    assert {p["metadata"]["labels"]["specdecode.io/load-plan"] for p in core.pods.values()} == {
        plan_hash(rerun)
    }


async def test_no_pod_is_created_for_a_prompt_set_that_does_not_parse() -> None:
    core = FakeCore()
    core.config_maps["bad"] = {"p.jsonl": '{"prompt": "ok"}\nnot json'}
    rt = runtime(core)
    await sync_load_pods(rt, OWNER, with_prompts("bad"), PLAN, [])
    await sync_load_pods(rt, OWNER, with_prompts("missing"), PLAN, [])
    assert not core.pods
    core.config_maps["good"] = {"p.jsonl": '{"prompt": "ok"}'}
    await sync_load_pods(rt, OWNER, with_prompts("good"), PLAN, [])
    assert len(core.pods) == 2


async def test_reports_become_one_window_per_side_and_garbage_is_an_error() -> None:
    core = FakeCore()
    seen: list[str] = []

    def pods_answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        side = "baseline" if request.url.host.startswith("10.1.0") else "candidate"
        return httpx.Response(200, content=json.dumps(report(side)))

    rt = runtime(core, pods_answer)
    await sync_load_pods(rt, OWNER, SPEC, PLAN, [])
    pods = observe_load_pods(rt, "team-a", "llama-8b")
    baseline, candidate = await read_windows(rt, ROLLOUT, PLAN, pods, since=100.0, now=110.0)
    assert isinstance(baseline, LatencySamples) and isinstance(candidate, LatencySamples)
    assert baseline.per_chunk_itl.total == 50 and candidate.per_chunk_itl.total == 50
    assert all("/v1/report?since=100.000" in url for url in seen) and len(seen) == 2

    broken = runtime(core, lambda request: httpx.Response(200, content=b'{"schema": 1}'))
    baseline, _ = await read_windows(broken, ROLLOUT, PLAN, pods, since=100.0, now=110.0)
    assert isinstance(baseline, MetricError) and "missing" in baseline.message

    silent = runtime(core, lambda request: httpx.Response(503))
    assert await read_windows(silent, ROLLOUT, PLAN, pods, 100.0, 110.0) == (None, None)
    assert ChildRole.BASELINE.value == "baseline"
