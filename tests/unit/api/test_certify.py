"""The kernel (`api.certify`) answers as the five places it replaced did, on every case of a
grid (gate type x settings x traffic source x method x concurrency x schedule), and each of
its clauses renders to CEL that cel-python evaluates to the same verdict: what admission
refuses and what judging skips are one decision."""

from __future__ import annotations

import itertools
from typing import Any

import celpy
import pytest
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from specdecode.api.certify import CLAUSES, Certification, StageContext, certify
from specdecode.api.gate_spec import GateSpec, GateType
from specdecode.api.traffic import TrafficSourceType

pytestmark = pytest.mark.unit

P, M = TrafficSourceType.PROMPTS, TrafficSourceType.MIRROR
SCHEDULES: list[list[list[int]] | None] = [
    None,
    [[1, 32, 0], [33, 4096, 3]],  # off through 32
    [[1, 3, 3], [4, 4096, 0]],  # speculates at 1-3 only
    [[1, 2, 0], [5, 4096, 0]],  # a gap at 3-4: counts as speculating
]
SETTINGS: dict[GateType, list[dict[str, Any]]] = {
    GateType.ACCEPTANCE: [{}],
    GateType.ACCEPTED_LENGTH: [{}],
    GateType.TAIL_LATENCY: [{}, {"itlDefinition": "PerChunk"}, {"itlDefinition": "ServerStep"}],
    GateType.SPEEDUP: [{}, {"minSpeedup": 0.9}, {"minSpeedup": 1.0}],
    GateType.ERROR_RATE: [{}],
}
FILTERS: list[list[str] | None] = [None, [], ["eagle3"], ["none"], ["ngram", "suffix"]]
FLAGS: list[dict[str, bool]] = [{}, {"dryRun": True}, {"failOnly": True}]


def _off_through(schedule: list[list[int]] | None, concurrency: int | None) -> bool:
    """k = 0 at every batch size 1..concurrency (a batch in no range counts as speculating)."""
    if schedule is None or concurrency is None:
        return False
    k_at = {b: k for low, high, k in schedule for b in range(low, min(high, 4096) + 1)}
    return all(k_at.get(batch, 1) == 0 for batch in range(1, concurrency + 1))


def _old_answer(gate: GateSpec, stage: StageContext) -> tuple[bool, bool, bool]:
    """What `GateParams.applies_to`, `not_judged_reason`, the Mirror admission rule and
    `_judge`'s unenforced / fail-only sets said, written out plainly."""
    tail = gate.type is GateType.TAIL_LATENCY
    if stage.source is M and tail and gate.itl_definition not in (None, "ServerStep"):
        return (False, False, False)  # refused by the CRD
    method = stage.method or "none"
    applies = not gate.methods or method in gate.methods
    mirror_skips = stage.source is M and gate.type is GateType.SPEEDUP
    schedule_skips = (
        gate.type is GateType.SPEEDUP
        and gate.number("min_speedup") >= 1.0
        and stage.method is not None
        and _off_through(stage.schedule, stage.concurrency)  # type: ignore[arg-type]
    )
    judged = applies and not mirror_skips and not schedule_skips
    may_fail = judged and not gate.dry_run
    return (judged, may_fail, may_fail and not gate.fail_only)


def _answer(found: Certification) -> tuple[bool, bool, bool]:
    return (found.judged, found.may_fail, found.certifies)


def _grid() -> list[tuple[GateSpec, StageContext]]:
    cases = []
    for gate_type, settings in SETTINGS.items():
        for setting, methods, flags in itertools.product(settings, FILTERS, FLAGS):
            wire: dict[str, Any] = {"name": "g", "type": gate_type.value, **setting, **flags}
            if methods is not None:
                wire["methods"] = methods
            gate = GateSpec.model_validate(wire)
            for source, method, concurrency, schedule in itertools.product(
                (P, M), (None, "eagle3", "ngram"), (None, 4, 32), SCHEDULES
            ):
                cases.append((gate, StageContext(source, method, concurrency, schedule)))
    return cases


GRID = _grid()
SCHEDULE_CLAUSE = 3


def test_the_kernel_answers_as_the_places_it_replaced() -> None:
    wrong = [
        (gate.to_wire(), stage)
        for gate, stage in GRID
        if _answer(certify(gate, stage)) != _old_answer(gate, stage)
    ]
    assert not wrong, (len(wrong), wrong[:3])
    # The grid reaches every answer, and every clause is the reason somewhere.
    first_broken = {
        next((i for i, (clause, _, _) in enumerate(CLAUSES) if not clause.value(env)), None)
        for env in (stage.env(gate) for gate, stage in GRID)
    }
    assert first_broken == {None, *range(len(CLAUSES))}


def _cel(program: Any, env: Any) -> bool:
    try:
        result = program.evaluate({name: json_to_cel(value) for name, value in env.items()})
    except CELEvalError:
        return False
    return not isinstance(result, CELEvalError) and bool(result)


@pytest.mark.parametrize("index", range(len(CLAUSES)))
def test_each_clause_renders_to_the_cel_it_evaluates(index: int) -> None:
    clause = CLAUSES[index][0]
    environment = celpy.Environment()
    program = environment.program(environment.compile(clause.cel()))
    # cel-python takes ~75 ms per schedule walk: that clause reads the cases it can break.
    schedules = [(g, s) for g, s in GRID if g.type is GateType.SPEEDUP and s.schedule][::20]
    cases = schedules if index == SCHEDULE_CLAUSE else GRID[::5]
    verdicts = [
        (bool(clause.value(env)), _cel(program, env))
        for env in (stage.env(gate) for gate, stage in cases)
    ]
    assert all(python == cel for python, cel in verdicts)
    assert {python for python, _ in verdicts} == {True, False}, "the grid must break it"
