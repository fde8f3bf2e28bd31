"""Close calls: a stage that ends undecided because an estimate sat at its gate's limit says
so, with the estimate, its bounds and the limits that would have decided either way."""

from __future__ import annotations

import math

import pytest
from domain_fixtures import (
    acceptance,
    acceptance_stage,
    analyzing,
    make_spec,
    run,
    shadows_ready,
    stage_obs,
)

from specdecode.api import Phase, SpecDecodeRolloutSpec
from specdecode.domain.close_call import HIGHER_IS_BETTER, close_call_text
from specdecode.domain.gate_measures import judged
from specdecode.domain.gates.registry import registered_types
from specdecode.domain.observations import AcceptanceCounts
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.stats import Interval
from specdecode.reconciler.status_boundary import status_of
from specdecode.report import gate_table
from specdecode.vocabulary import GateType, GateVerdict

pytestmark = pytest.mark.unit

STRADDLING = Interval(value=1.391, lower=1.369, upper=1.401, samples=400)


def test_every_gate_type_says_which_way_its_limit_points() -> None:
    assert set(HIGHER_IS_BETTER) == set(registered_types()) == set(GateType)
    # Each direction stated here too: the table is built from the gates' own modules.
    assert HIGHER_IS_BETTER == {
        GateType.ACCEPTANCE: True,
        GateType.ACCEPTED_LENGTH: True,
        GateType.SPEEDUP: True,
        GateType.TAIL_LATENCY: False,
        GateType.ERROR_RATE: False,
    }


def test_an_undecided_look_on_enough_data_straddling_its_limit_is_a_close_call() -> None:
    assert judged(GateVerdict.INCONCLUSIVE, "r", STRADDLING, 1.40).close_call
    # Held back for its data minimum, decided, or not holding the limit: no close call.
    assert not judged(GateVerdict.INCONCLUSIVE, "r", STRADDLING, 1.40, enough_data=False).close_call
    assert not judged(GateVerdict.SUCCESSFUL, "r", STRADDLING, 1.45).close_call
    assert not judged(GateVerdict.INCONCLUSIVE, "r", STRADDLING, 1.50).close_call
    # An unbounded side (a ServerStep rank in the +Inf bucket) has no limit to name.
    unbounded = Interval(value=1.39, lower=1.2, upper=math.inf, samples=400)
    assert not judged(GateVerdict.INCONCLUSIVE, "r", unbounded, 1.40).close_call


def test_the_words_name_the_limits_that_decide_either_way() -> None:
    upper_limit = close_call_text(GateType.TAIL_LATENCY, 1.391, 1.369, 1.401, 1.40)
    assert upper_limit == (
        "close call: 1.391 [1.369, 1.401] against the limit 1.4; a limit of 1.401 or more "
        "would have passed it, one under 1.369 failed it"
    )
    lower_limit = close_call_text(GateType.ACCEPTANCE, 0.55, 0.53, 0.57, 0.55)
    assert "a limit of 0.530 or less would have passed it, one over 0.570 failed it" in (
        lower_limit
    )


def _undecided_end(counts: AcceptanceCounts) -> RolloutState:
    """A one-stage analysis whose acceptance gate sees `counts` at every look to the end."""
    spec: SpecDecodeRolloutSpec = make_spec(stages=[acceptance_stage()])
    status = analyzing(spec)
    for seconds in range(15, 400, 15):
        seen = shadows_ready(
            candidate=spec.speculative, stage=stage_obs("acceptance", acceptance_counts=counts)
        )
        status = run(spec, status, seen, seconds).status
        if status.phase is not Phase.ANALYZING:
            break
    return status


def test_a_stage_ending_at_its_limit_says_close_call_in_status_and_the_table() -> None:
    # alpha exactly at minAlpha 0.55 over plenty of drafts and requests: it cannot decide.
    final = _undecided_end(acceptance(0.55, drafts=20_000, requests=400))
    assert final.phase is Phase.ROLLED_BACK, final.message
    gate = final.stages[0].gates[0]
    assert gate.verdict is GateVerdict.INCONCLUSIVE and gate.close_call, gate
    assert "undecided after 300s" in final.message
    assert "alpha: Inconclusive, close call: 0.550 [" in final.message, final.message
    assert "against the limit 0.55; a limit of" in final.message
    table = gate_table(
        {
            "metadata": {"namespace": "ns", "name": "r"},
            "status": status_of(final).model_dump(by_alias=True),
        }
    )
    assert "Inconclusive (close call)" in table
    assert "acceptance/alpha: close call: 0.550 [" in table, table


def test_too_little_data_is_undecided_but_no_close_call() -> None:
    # The same alpha over too few requests for the gate: undecided for want of data.
    final = _undecided_end(acceptance(0.55, drafts=20_000, requests=5))
    assert final.phase is Phase.ROLLED_BACK, final.message
    assert not final.stages[0].gates[0].close_call
    assert "close call" not in final.message
