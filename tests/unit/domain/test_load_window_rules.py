"""The window rules a look's read follows (`domain.load_window`): a shard without a report
makes the side's window incomplete (Inconclusive, naming it), and no report at all is
nothing measured yet (None), for load pods and the splitter alike."""

from __future__ import annotations

import pytest

from specdecode.domain.load_report import LoadReport
from specdecode.domain.load_window import shards_window, splitter_window

pytestmark = pytest.mark.unit


def report(shard: int) -> LoadReport:
    return LoadReport(
        side="candidate",
        shard=shard,
        shards=2,
        boot_time=0.0,
        restarts=0,
        block_seconds=2.0,
        sent=10,
        output_tokens=100,
        cap_reached=False,
        blocks=(),
    )


def test_every_shard_reported_is_a_complete_window() -> None:
    window = shards_window("candidate", 2, {0: report(0), 1: report(1)}, 100.0, 110.0)
    assert window is not None and window.incomplete is None and window.shards == 2


def test_a_shard_without_a_running_pod_makes_the_window_incomplete_naming_it() -> None:
    window = shards_window("candidate", 2, {0: report(0)}, 100.0, 110.0)
    assert window is not None and window.shards == 1
    assert window.incomplete == "candidate load incomplete: shard 1 has no running load pod"


def test_a_shard_that_did_not_answer_is_named_with_why() -> None:
    read: dict[int, LoadReport | str] = {0: "load pod p-0 did not answer (timeout)", 1: report(1)}
    window = shards_window("candidate", 2, read, 100.0, 110.0)
    assert window is not None
    assert window.incomplete == "candidate load incomplete: load pod p-0 did not answer (timeout)"


def test_no_report_at_all_is_nothing_measured_yet_not_an_incomplete_window() -> None:
    assert shards_window("candidate", 2, {}, 100.0, 110.0) is None
    assert shards_window("candidate", 2, {0: "load pod p-0 did not answer (x)"}, 100, 110) is None


def test_the_splitter_not_running_is_nothing_measured_and_silent_is_incomplete() -> None:
    assert splitter_window("baseline", None, 100.0, 110.0) is None
    silent = splitter_window("baseline", "splitter s did not answer (refused)", 100.0, 110.0)
    assert silent is not None
    assert silent.incomplete == "baseline load incomplete: splitter s did not answer (refused)"
    answered = splitter_window("baseline", report(0), 100.0, 110.0)
    assert answered is not None and answered.incomplete is None and answered.shards == 1
