"""The status's size budget: what is written never approaches etcd's object limit.

Why: etcd refuses an object over 1.5 MiB and a failed status write leaves a rollout stuck,
while at the spec's maxima the looks alone would be about 5 MiB. So looks are kept only for
the stage in progress (`LOOK_BUDGET`), texts are cut, and
tests/unit/api/test_status_budget.py checks the largest status stays under the budget.
"""

from __future__ import annotations

from typing import Any

from specdecode.api.status import SpecDecodeRolloutStatus, StageStatus
from specdecode.vocabulary import MAX_LOOKS_KEPT, StagePhase

LOOK_BUDGET = 512  # looks kept in the stage in progress, all its gates together
MAX_LOOKS_KEPT_FINISHED = 1
MAX_TEXT_LENGTH = 1024
MAX_REASON_LENGTH = 320  # a gate's reason, a load note: one line with its numbers
# Well under etcd's 1.5 MiB, leaving room for the spec, metadata and managedFields.
STATUS_BUDGET_BYTES = 768 * 1024


def within_budget(status: SpecDecodeRolloutStatus) -> SpecDecodeRolloutStatus:
    """`status` as it is written: looks of finished stages trimmed, texts cut.

    Idempotent, and the identity on a status already within it (so a status read back
    compares equal to the one the domain computes from it).
    """
    current = status.current_stage_index
    speaking = current if current is not None else _last_that_ran(status.stages)
    stages = []
    changed = False
    for index, stage in enumerate(status.stages):
        shared = min(MAX_LOOKS_KEPT, LOOK_BUDGET // max(1, len(stage.gates)))
        keep = shared if index == current else MAX_LOOKS_KEPT_FINISHED
        gates = []
        for gate in stage.gates:
            if len(gate.looks) > keep:
                gates.append(gate.model_copy(update={"looks": gate.looks[-keep:]}))
                changed = True
            else:
                gates.append(gate)
        load = stage.load
        if load is not None and load.acceptance_by_traffic and index != speaking:
            load = load.model_copy(update={"acceptance_by_traffic": []})
            changed = True
        stages.append(stage.model_copy(update={"gates": gates, "load": load}))
    trimmed = status.model_copy(update={"stages": stages}) if changed else status
    dumped = trimmed.model_dump(mode="json", by_alias=True)
    cut = _cut_texts(dumped)
    if not changed and cut == dumped:
        return status
    return SpecDecodeRolloutStatus.model_validate(cut)


def _last_that_ran(stages: list[StageStatus]) -> int | None:
    ran = [index for index, stage in enumerate(stages) if stage.phase is not StagePhase.PENDING]
    return ran[-1] if ran else None


def _cut_texts(value: Any, limit: int = MAX_TEXT_LENGTH) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[: limit - 1] + "…"
    if isinstance(value, dict):
        # "reason" is a gate's sentence; the status's and conditions' are short CamelCase.
        return {
            key: _cut_texts(item, MAX_REASON_LENGTH if key in ("reason", "notes") else limit)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_cut_texts(item, limit) for item in value]
    return value
