"""Fail-only gates (issue 22): a gross early check may fail its stage, never pass it.

The default acceptance stage's ErrorRate gate (maxErrorRate 0.1) is fail-only: a candidate
failing exactly 10 % more requests than the baseline sits on its threshold, where no bound
can ever decide, so a gate the stage waited for would hold the stage undecided until its
maxDuration and roll back Inconclusive; fail-only, the stage passes on its other evidence
and the strict ErrorRate gate of the production-concurrency stage (0.02) fails it. The
control: the same stage with the gate enforced stays undecided on the same data.
"""

from __future__ import annotations

import dataclasses

import pytest
from domain_fixtures import (
    acceptance,
    acceptance_stage,
    analyzing,
    make_spec,
    run,
    shadows_ready,
    stage_obs,
    streamed,
)

from specdecode.api import GateSpec, GateType, GateVerdict, Phase, SpecDecodeRolloutSpec
from specdecode.api.analysis import default_stages
from specdecode.domain.observations import LatencySamples
from specdecode.domain.rollout_state import RolloutState

pytestmark = pytest.mark.unit

GOOD = acceptance(0.75, drafts=20_000, requests=300)


def _outcomes(ok: int, failed: int) -> LatencySamples:
    """One side's load report: `ok` and `failed` requests, with the candidate's per-request
    acceptance moments (the baseline's are never read)."""
    report = streamed(GOOD)
    block = dataclasses.replace(report.blocks[0], requests_ok=ok, requests_failed=failed)
    return dataclasses.replace(report, blocks=(block,), window_seconds=60.0)


def _spec(fail_only: bool) -> SpecDecodeRolloutSpec:
    gates = [
        GateSpec(name="alpha", type=GateType.ACCEPTANCE, min_alpha=0.55),
        GateSpec(name="errors", type=GateType.ERROR_RATE, max_error_rate=0.1, fail_only=fail_only),
    ]
    return make_spec(stages=[acceptance_stage(gates=gates)])


def _look_twice(spec: SpecDecodeRolloutSpec, failed: int) -> RolloutState:
    """Two looks after warm-up at the same data: the candidate fails `failed` of 400."""
    observed = stage_obs(
        "acceptance",
        GOOD,
        baseline=_outcomes(400, 0),
        candidate=_outcomes(400 - failed, failed),
    )
    status = analyzing(spec)
    for seconds in (31, 91):
        status = run(spec, status, shadows_ready(stage=observed), seconds).status
    return status


def test_a_fail_only_gate_on_its_threshold_does_not_hold_the_stage() -> None:
    status = _look_twice(_spec(fail_only=True), failed=40)  # exactly 10 % more
    errors = status.stages[0].gates[1]
    assert errors.verdict is GateVerdict.INCONCLUSIVE and errors.fail_only, errors
    assert status.phase is Phase.PROMOTING, status.message
    assert "errors (fail only, Inconclusive)" in status.stages[0].message


def test_control_the_same_gate_enforced_holds_the_stage_undecided() -> None:
    status = _look_twice(_spec(fail_only=False), failed=40)
    assert status.stages[0].gates[1].verdict is GateVerdict.INCONCLUSIVE
    assert status.phase is Phase.ANALYZING


def test_a_failed_fail_only_gate_rolls_back() -> None:
    status = _look_twice(_spec(fail_only=True), failed=200)  # half the requests fail
    assert status.phase is Phase.ROLLED_BACK and status.reason == "GateFailed", status.message
    assert "acceptance/errors" in status.message


def test_a_passing_fail_only_gate_alone_is_no_evidence() -> None:
    """A stage whose only gate can pass is fail-only never passes (built around the models,
    which refuse it, as an object stored before that rule)."""
    spec = _spec(fail_only=True)
    stage = spec.analysis.stages[0].model_copy(update={"gates": spec.analysis.stages[0].gates[1:]})
    spec = spec.model_copy(
        update={"analysis": spec.analysis.model_copy(update={"stages": [stage]})}
    )
    status = _look_twice(spec, failed=0)
    assert status.stages[0].gates[0].verdict is GateVerdict.SUCCESSFUL
    assert status.phase is Phase.ANALYZING


def test_the_default_acceptance_stage_checks_errors_fail_only_and_production_strictly() -> None:
    acceptance_gate, production_gate = (
        next(gate for gate in stage.gates if gate.type is GateType.ERROR_RATE)
        for stage in default_stages()
    )
    assert acceptance_gate.fail_only and acceptance_gate.number("max_error_rate") == 0.1
    assert not production_gate.fail_only and production_gate.number("max_error_rate") == 0.02
