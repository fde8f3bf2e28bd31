"""A reconcile's snapshot is immutable all the way down: no decision can change it.

Issue 35 item 1: `decide_pass` is a pure function of one snapshot (`reconciler.observe`).
Every snapshot of the restart test's scripted analyses (Mirror, Owned Prompts with load
pods, adopted GitOps, Patch and Mirror through the splitter) is walked to its leaves: each
model, dataclass, list and dict in it refuses a write, and none is a plain (mutable) one.
The frozen copy is equal to what was read and serialises the same, a deep copy of it is
mutable again, and the decision on it is the decision on the unfrozen one.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import FrozenInstanceError
from typing import Any

import pytest
import test_restart_every_look as restart_test
from pydantic import BaseModel, ValidationError

from specdecode.adapters.frozen import FrozenDict, FrozenError, FrozenList, frozen
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.pass_decision import decide_pass
from specdecode.domain.sketch import Sketch
from specdecode.reconciler import reconcile as reconcile_module
from specdecode.reconciler.observe import Snapshot, observe

pytestmark = pytest.mark.unit

ROLLOUTS = ["mirror", "owned-prompts", "adopted-gitops", "adopted-patch", "adopted-mirror"]


def _parts(value: Any, path: str = "snapshot") -> Iterator[tuple[str, Any]]:
    """Every container reached from `value` (models, dataclasses, lists, dicts, sets)."""
    if isinstance(value, BaseModel):
        yield path, value
        for name, item in value.__dict__.items():
            yield from _parts(item, f"{path}.{name}")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield path, value
        for field in dataclasses.fields(value):
            yield from _parts(getattr(value, field.name), f"{path}.{field.name}")
    elif isinstance(value, list | tuple | set | frozenset):
        yield path, value
        for index, item in enumerate(value):
            yield from _parts(item, f"{path}[{index}]")
    elif isinstance(value, Mapping):
        yield path, value
        for key, item in value.items():
            yield from _parts(item, f"{path}[{key!r}]")


def _write(part: Any) -> None:
    """One write into `part`, of the kind its type allows (it must raise)."""
    if isinstance(part, BaseModel):
        name = next(iter(type(part).model_fields))
        setattr(part, name, getattr(part, name))
    elif dataclasses.is_dataclass(part):
        name = dataclasses.fields(part)[0].name
        setattr(part, name, getattr(part, name))
    elif isinstance(part, list):
        part.append(None)
    elif isinstance(part, Mapping):
        part["written"] = None  # type: ignore[index]
    else:
        raise AssertionError(f"immutable by type: {type(part).__name__}")


async def _snapshots(name: str, monkeypatch: pytest.MonkeyPatch) -> list[Snapshot]:
    """The snapshot each reconcile of the scripted rollout `name` decided and acted on."""
    taken: list[Snapshot] = []

    async def keep(*args: Any) -> Snapshot:
        taken.append(await observe(*args))
        return taken[-1]

    monkeypatch.setattr(reconcile_module, "observe", keep)
    await restart_test._drive(False, restart_test.ROLLOUTS[name], monkeypatch)
    return taken


@pytest.mark.parametrize("name", ROLLOUTS)
async def test_every_part_of_every_snapshot_refuses_a_write(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = await _snapshots(name, monkeypatch)
    assert len(taken) == restart_test.STEPS
    checked = 0
    for snapshot in taken:
        for path, part in _parts(snapshot):
            if isinstance(part, tuple | frozenset):
                continue  # immutable by type (their items are walked)
            if isinstance(part, Mapping) and not isinstance(part, dict):
                raise AssertionError(f"{path}: a {type(part).__name__}, not a FrozenDict")
            with pytest.raises((FrozenError, FrozenInstanceError, ValidationError)):
                _write(part)
            checked += 1
    assert checked > 40 * restart_test.STEPS  # the walk reached the leaves (models, lists)


@pytest.mark.parametrize("name", ROLLOUTS)
async def test_the_frozen_snapshot_is_what_was_read_and_decides_the_same(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for snapshot in await _snapshots(name, monkeypatch):
        read = copy.deepcopy(snapshot)  # thawed: plain lists and dicts, equal
        assert type(read.seen.status.conditions) is list
        assert snapshot == read
        assert snapshot.seen.status.model_dump_json() == read.seen.status.model_dump_json()
        assert decide_pass(snapshot.seen, snapshot.now) == decide_pass(read.seen, read.now)


async def test_a_decision_that_writes_into_its_snapshot_fails_loudly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def careless(seen: Any, now: Any) -> Any:
        decision = decide_pass(seen, now)
        seen.status.conditions.clear()  # changes what was read
        return decision

    monkeypatch.setattr(reconcile_module, "decide_pass", careless)
    with pytest.raises(FrozenError):
        await restart_test._drive(False, restart_test.ROLLOUTS["adopted-gitops"], monkeypatch)


def test_a_copy_of_a_frozen_value_is_mutable_and_equal() -> None:
    status = SpecDecodeRolloutStatus.model_validate(
        {
            "phase": "Analyzing",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "AsExpected",
                    "lastTransitionTime": "2026-01-01T12:00:00Z",
                }
            ],
        }
    )
    ice = frozen(status)
    assert ice == status and type(ice) is SpecDecodeRolloutStatus
    assert ice.model_dump_json() == status.model_dump_json()
    assert isinstance(ice.conditions, FrozenList)
    with pytest.raises(FrozenError):
        ice.conditions.append(ice.conditions[0])
    shallow = ice.model_copy(update={"message": "changed"})  # shares the frozen parts
    with pytest.raises(FrozenError):
        shallow.conditions.append(ice.conditions[0])
    for deep in (ice.model_copy(deep=True), copy.deepcopy(ice)):
        assert deep == status and type(deep.conditions) is list
        deep.conditions.append(deep.conditions[0])  # a deep copy is the decision's own
    assert len(ice.conditions) == 1 and len(status.conditions) == 1
    counts = frozen({"a": Sketch({1: 2})})
    assert isinstance(counts, FrozenDict)
    with pytest.raises(TypeError):
        counts["a"].add(0.5)  # a sketch's counts too
    assert counts["a"].copy().counts == {1: 2}
