"""Hole 6, the decision itself: where a per-batch-size schedule counts as not speculating,
and that admission refuses exactly the schedules whose every stage would skip its speed
gate (one expression, `api.schedule_reach`, read by both)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pydantic import ValidationError

from localcluster.manifests import load_example, merged
from specdecode.api import SpecDecodeRollout
from specdecode.api.schedule_reach import speculation_off_through
from specdecode.api.speculative import SpeculativeConfig

pytestmark = pytest.mark.unit

EAGLE3 = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}


def _config(schedule: list[list[int]] | None) -> SpeculativeConfig:
    wire: dict[str, Any] = {**EAGLE3, "num_speculative_tokens": 3}
    if schedule is not None:
        wire["num_speculative_tokens_per_batch_size"] = schedule
    return SpeculativeConfig.model_validate(wire)


@pytest.mark.parametrize(
    ("schedule", "batch", "off"),
    [
        ([[1, 8, 3], [9, 4096, 0]], 32, False),  # k = 0 at 32, but batches 1-8 speculate
        ([[1, 8, 3], [9, 4096, 0]], 8, False),
        ([[1, 32, 0], [33, 4096, 3]], 32, True),
        ([[1, 32, 0], [33, 4096, 3]], 33, False),
        ([[1, 4, 0], [5, 32, 0], [33, 4096, 3]], 32, True),  # several k = 0 ranges in a row
        ([[1, 2, 0], [5, 4096, 0]], 2, True),
        ([[1, 2, 0], [5, 4096, 0]], 4, False),  # 3-4 in no range: k unknown, not off
        ([[1, 2, 0], [5, 4096, 0]], 8, False),
        ([[1, 8, 0]], 8, True),
        ([[1, 8, 0]], 9, False),  # past the last range: k unknown
        ([[1, 4096, 0]], 1, True),
        (None, 32, False),  # no schedule: k at every batch size
    ],
)
def test_off_only_where_every_batch_size_up_to_the_load_has_k_zero(
    schedule: list[list[int]] | None, batch: int, off: bool
) -> None:
    assert speculation_off_through(_config(schedule), batch) is off


def test_an_unknown_batch_size_or_plain_decoding_is_never_off() -> None:
    assert speculation_off_through(_config([[1, 4096, 0]]), None) is False  # requestRate
    assert speculation_off_through(None, 32) is False  # plain decoding is judged on speed


SCHEDULES = [
    [[1, 8, 3], [9, 4096, 0]],
    [[1, 16, 0], [17, 4096, 3]],
    [[1, 32, 0], [33, 4096, 3]],
    [[1, 2, 0], [5, 4096, 0]],
    [[1, 16, 0]],
    [[1, 4096, 0]],
]
LOADS = [[4], [16], [4, 16], [4, 32], [16, 48]]


def _rollout(schedule: list[list[int]], stages: list[dict[str, Any]]) -> dict[str, Any]:
    patch = {
        "spec": {
            "speculative": {"num_speculative_tokens_per_batch_size": schedule},
            "analysis": {"stages": stages},
        }
    }
    obj: dict[str, Any] = merged(load_example(), patch)
    return obj


def _stage(index: int, load: dict[str, Any]) -> dict[str, Any]:
    gates = [{"name": "speed", "type": "Speedup"}]
    return {"name": f"s{index}", "minDurationSeconds": 20, "gates": gates, **load}


@pytest.mark.parametrize(("schedule", "loads"), list(itertools.product(SCHEDULES, LOADS)), ids=str)
def test_admission_refuses_exactly_where_every_stage_would_skip_its_speed_gate(
    schedule: list[list[int]], loads: list[int]
) -> None:
    stages = [_stage(i, {"concurrency": c}) for i, c in enumerate(loads)]
    every_stage_skips = all(speculation_off_through(_config(schedule), c) for c in loads)
    obj = _rollout(schedule, stages)
    if every_stage_skips:
        with pytest.raises(ValidationError, match="no stage reaches a batch size"):
            SpecDecodeRollout.model_validate(obj)
    else:
        SpecDecodeRollout.model_validate(obj)


def test_a_request_rate_stage_or_mirror_traffic_reaches_any_batch_size() -> None:
    never = [[1, 4096, 0]]
    closed = _stage(0, {"concurrency": 16})
    with pytest.raises(ValidationError, match="no stage reaches a batch size"):
        SpecDecodeRollout.model_validate(_rollout(never, [closed]))
    SpecDecodeRollout.model_validate(_rollout(never, [closed, _stage(1, {"requestRate": 2.0})]))
    gates = [{"name": "itl", "type": "TailLatency"}, {"name": "errors", "type": "ErrorRate"}]
    tail = {**closed, "gates": gates}
    mirror = {"traffic": {"source": "Mirror", "httpRoute": "llm"}}
    SpecDecodeRollout.model_validate(
        merged(_rollout(never, [tail]), {"spec": {"analysis": mirror}})
    )
