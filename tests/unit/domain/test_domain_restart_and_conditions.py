"""Restart safety (decide is a function of its inputs, with a fixed point) and conditions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from domain_fixtures import (
    EAGLE3,
    acceptance,
    analyzing,
    at,
    make_spec,
    observe,
    pending,
    ready,
    run,
    shadows_ready,
    stage_obs,
    status_in,
)

from specdecode.api import ConditionStatus, Phase
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.observations import Observations
from specdecode.domain.rollout_state import ConditionRecord, RolloutState
from specdecode.reconciler.observe import state_of
from specdecode.reconciler.status_boundary import status_of

pytestmark = pytest.mark.unit

SPEC = make_spec()
GOOD = stage_obs("acceptance", acceptance(0.75, drafts=20_000, requests=300))
BAD = stage_obs("acceptance", acceptance(0.30, drafts=20_000, requests=300))

CASES: list[tuple[str, RolloutState, Observations, float]] = [
    ("creation", RolloutState(), observe(), 0),
    ("deploying to analyzing", status_in(SPEC, "Deploying"), shadows_ready(), 20),
    ("warming up", analyzing(SPEC), shadows_ready(stage=GOOD), 20),
    ("first look", analyzing(SPEC), shadows_ready(stage=GOOD), 31),
    ("gate fails", analyzing(SPEC), shadows_ready(stage=BAD), 31),
    ("promoting done", status_in(SPEC, "Promoting"), observe(production=ready(EAGLE3)), 60),
    ("deadline", status_in(SPEC, "Deploying"), observe(candidate=pending("no GPU")), 700),
    ("degraded", status_in(SPEC, "Degraded"), observe(production=pending()), 20_000),
]


# A restarted operator is a new interpreter (new hash seed, empty module state) that sees
# only what the API server stored. It decides in a child process; this process decides the
# same cases after having decided all of them once already (in reverse order), so any memory
# kept outside status (module-level caches, "already emitted" sets, hash-seed-ordered
# iteration) makes the two disagree.
RESTARTED_OPERATOR = """
import sys
from test_domain_restart_and_conditions import CASES, SPEC
from domain_fixtures import run
for name, status, observations, seconds in CASES:
    print(name, "=", repr(run(SPEC, status, observations, seconds)))
"""


@pytest.fixture(scope="module")
def restarted_decisions() -> dict[str, str]:
    here = Path(__file__).parent
    pythonpath = os.pathsep.join([str(here), *sys.path])
    environment = {**os.environ, "PYTHONPATH": pythonpath, "PYTHONHASHSEED": "4242"}
    child = subprocess.run(
        [sys.executable, "-c", RESTARTED_OPERATOR],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    decisions = (line.split(" = ", 1) for line in child.stdout.splitlines())
    return {name: decision for name, decision in decisions}


@pytest.fixture(scope="module")
def running_operator_decisions() -> dict[str, str]:
    for _, status, observations, seconds in reversed(CASES):  # the running operator's past
        run(SPEC, status, observations, seconds)
    return {
        name: repr(run(SPEC, status, observations, seconds))
        for name, status, observations, seconds in CASES
    }


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_a_restarted_operator_decides_as_the_running_one(
    name: str, restarted_decisions: dict[str, str], running_operator_decisions: dict[str, str]
) -> None:
    assert restarted_decisions[name] == running_operator_decisions[name]


@pytest.mark.parametrize(
    ("status", "observations", "seconds"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_deciding_again_at_the_same_instant_changes_nothing(
    status: RolloutState, observations: Observations, seconds: float
) -> None:
    # The operator killed after writing status but before applying children runs again.
    first = run(SPEC, status, observations, seconds)
    again = run(SPEC, first.status, observations, seconds)
    assert again.status == first.status
    assert again.events == ()
    assert again.children == first.children
    assert again.traffic == first.traffic


def test_status_round_trips_through_the_api_server() -> None:
    # Nothing lives outside status: what the API server stores is enough to continue.
    decision = run(SPEC, analyzing(SPEC), shadows_ready(stage=GOOD), 31)
    wire = SpecDecodeRolloutStatus.model_validate(status_of(decision.status).to_wire())
    stored = state_of(wire)
    assert stored == decision.status
    later = shadows_ready(stage=GOOD)
    assert run(SPEC, stored, later, 91) == run(SPEC, decision.status, later, 91)


def _condition(status: RolloutState, kind: str) -> ConditionRecord:
    return next(c for c in status.conditions if c.type == kind)


def test_conditions_keep_last_transition_time_while_unchanged() -> None:
    status = analyzing(SPEC)  # decided at t=0
    later = run(SPEC, status, shadows_ready(stage=GOOD), 31).status
    progressing = _condition(later, "Progressing")
    assert progressing.status is ConditionStatus.TRUE
    assert progressing.last_transition_time == at(0)
    rolled_back = run(SPEC, later, shadows_ready(action="abort"), 40).status
    assert _condition(rolled_back, "Progressing").last_transition_time == at(40)
    assert _condition(rolled_back, "Ready").last_transition_time == at(0)  # False all along


@pytest.mark.parametrize(
    ("phase", "is_ready", "progressing", "degraded", "reconciling", "stalled"),
    [
        ("Deploying", "False", "True", "False", "True", "False"),
        ("Analyzing", "False", "True", "False", "True", "False"),
        ("Paused", "False", "True", "False", "True", "False"),
        ("Promoting", "False", "True", "False", "True", "False"),
        ("Promoted", "True", "False", "False", "False", "False"),
        ("Degraded", "False", "False", "True", "False", "True"),
        ("RolledBack", "False", "False", "True", "False", "True"),
        ("Failed", "False", "False", "True", "False", "True"),
    ],
)
def test_conditions_in_kstatus_shape(
    phase: str, is_ready: str, progressing: str, degraded: str, reconciling: str, stalled: str
) -> None:
    status = status_in(SPEC, phase)
    if phase == "Promoted":
        observations = observe(production=ready(EAGLE3))
    elif phase == "Paused":
        observations = shadows_ready()
    else:
        observations = observe(production=pending())
    decided = run(SPEC, status, observations, 1).status
    assert decided.phase.value == phase
    truth = {c.type: c.status.value for c in decided.conditions}
    assert truth == {
        "Ready": is_ready,
        "Progressing": progressing,
        "Degraded": degraded,
        "Reconciling": reconciling,
        "Stalled": stalled,
    }
    assert all(c.observed_generation == 1 and c.reason for c in decided.conditions)


def test_rolled_back_condition_carries_the_reason() -> None:
    decided = run(SPEC, analyzing(SPEC), shadows_ready(stage=BAD), 31).status
    degraded = _condition(decided, "Degraded")
    assert (degraded.status, degraded.reason) == (ConditionStatus.TRUE, "GateFailed")
    assert "alpha 0.300" in degraded.message
    assert decided.phase is Phase.ROLLED_BACK
    assert decided.alpha is not None and decided.alpha.startswith("0.30 [")
