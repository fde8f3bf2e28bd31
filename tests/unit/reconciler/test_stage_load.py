"""A look's load reaches the status written on the stage run it measured, and only there
(`reconciler.stage_load`): the domain hands it over as a `LoadSummary`, the wire's
`LoadRecord` is built once, in apply."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from specdecode.domain.acceptance_split import GroupAcceptance
from specdecode.domain.decision import Decision, DesiredChildren
from specdecode.domain.load_status import LoadLook, LoadSummary
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.stage_state import LoadRecord, StageRun, TrafficGroupRecord
from specdecode.reconciler.stage_load import load_status_of, with_stage_load
from specdecode.vocabulary import AcceptanceBasis

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GROUP = GroupAcceptance(
    "code", "greedy", "short", 3, 40, 1.5, 0.6, 0.5, 0.7, AcceptanceBasis.ENGINE
)
SUMMARY = LoadSummary("1/1", 9, 0.4, ("a note",), ("baseline: 9 ok; 0 stalls",), (GROUP,))


def _decision(stages: list[StageRun], look: LoadLook | None) -> Decision:
    status = RolloutState(stages=stages)
    return Decision(status, DesiredChildren(production=None), stage_load=look)


def test_the_summary_is_the_wire_load_field_for_field() -> None:
    assert load_status_of(SUMMARY) == LoadRecord(
        shards="1/1",
        requests=9,
        client_delay_p99_ms=0.4,
        notes=["a note"],
        outcomes=["baseline: 9 ok; 0 stalls"],
        acceptance_by_traffic=[
            TrafficGroupRecord(
                traffic_class="code",
                temperature="greedy",
                output_length="short",
                requests=3,
                steps=40,
                accepted_per_step=1.5,
                alpha=0.6,
                lower_bound=0.5,
                upper_bound=0.7,
                basis=AcceptanceBasis.ENGINE,
            )
        ],
    )
    assert load_status_of(None) is None


def test_the_load_goes_on_the_run_it_measured_only() -> None:
    old = LoadRecord(shards="0/0")
    measured = StageRun(name="a", started_at=T0, load=old)
    other = StageRun(name="b", started_at=T0, load=old)
    written = with_stage_load(_decision([measured, other], LoadLook("a", T0, SUMMARY)))
    assert [stage.load for stage in written.status.stages] == [load_status_of(SUMMARY), old]
    # the run restarted in the same pass (a later start) keeps none of the look's load
    restarted = StageRun(name="a", started_at=T0 + timedelta(seconds=5))
    again = with_stage_load(_decision([restarted], LoadLook("a", T0, SUMMARY)))
    assert again.status.stages[0].load is None
    # a look without load windows clears the run's load, as the look before it wrote it
    cleared = with_stage_load(_decision([measured], LoadLook("a", T0, None)))
    assert cleared.status.stages[0].load is None


def test_a_pass_without_a_look_is_written_as_decided() -> None:
    decision = _decision([StageRun(name="a", started_at=T0)], None)
    assert with_stage_load(decision) is decision
