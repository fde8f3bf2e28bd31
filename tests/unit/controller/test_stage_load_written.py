"""The load of a stage's look reaches the status written through the whole reconcile: the
domain decides it as a `LoadSummary`, apply writes it as `stages[].load`
(`reconciler.stage_load`); the scripted analysis of the restart test on the operator's own
load pods, whose reports answer."""

from __future__ import annotations

import pytest
from test_restart_every_look import ROLLOUTS, _drive

pytestmark = pytest.mark.unit


async def test_the_looks_load_is_in_the_status_written(monkeypatch: pytest.MonkeyPatch) -> None:
    run, _ = await _drive(False, ROLLOUTS["owned-prompts"], monkeypatch)
    loads = [
        stage["load"]
        for status in run.statuses
        for stage in (status or {}).get("stages", [])
        if stage.get("load")
    ]
    assert loads, "no status written carried a stage's load"
    assert all(load["shards"] and load["outcomes"] for load in loads)
