"""The one field table of latency blocks: merge, wire and window sums cover every field."""

from __future__ import annotations

import dataclasses
import json

import pytest

from specdecode.domain.in_flight import InFlight, OpenRequest
from specdecode.domain.latency_block import (
    BLOCK_FIELDS,
    AcceptedMoments,
    GroupEvidence,
    LatencyBlock,
)
from specdecode.domain.load_report import ReportError, block_from_wire, block_to_wire
from specdecode.domain.load_status import load_status
from specdecode.domain.observations import LatencySamples, StageObservations
from specdecode.domain.sketch import Sketch

pytestmark = pytest.mark.unit


def _full(scale: int) -> LatencyBlock:
    """A block whose every table field holds something that depends on `scale`."""
    values: dict[str, object] = {}
    for f in BLOCK_FIELDS:
        values[f.name] = {
            "sketch": Sketch.of([0.01 * scale, 0.5 * scale]),
            "count": 3 * scale,
            "sum": 1.5 * scale,
            "tally": {"timeout": scale, f"http_{500 + scale}": 1},
            "moments": AcceptedMoments.of([(10.0 * scale, 4.0 * scale)]),
            "groups": {
                "code/greedy/short": GroupEvidence(AcceptedMoments.of([(5.0 * scale, 2.0)])),
                f"chat/low/{('short', 'long')[scale % 2]}": GroupEvidence(
                    AcceptedMoments.of([(3.0, 1.0)]), AcceptedMoments.of([(9.0, 6.0)]), 3
                ),
            },
            "latest": f"error {scale}",
            "snapshot": InFlight.of(
                [OpenRequest(3.0 * scale, 1.0 * scale), OpenRequest(0.5, 0.1)], 45.0
            ),
        }[f.kind]
    return LatencyBlock(start=100.0, seconds=2.0, **values)  # type: ignore[arg-type]


def test_every_field_of_the_dataclass_is_in_the_table() -> None:
    names = {f.name for f in dataclasses.fields(LatencyBlock)} - {"start", "seconds"}
    assert {f.name for f in BLOCK_FIELDS} == names


def test_wire_round_trip_keeps_every_field() -> None:
    block = _full(2)
    again = block_from_wire(json.loads(json.dumps(block_to_wire(block))))
    assert again == block
    assert block_to_wire(block)["slotSeconds"] == block.slot_seconds.to_wire()


def test_merge_adds_every_field_by_its_kind() -> None:
    merged = _full(1).plus(_full(2))
    assert merged.requests_failed == 9 and merged.stalls == 9
    assert merged.failures == {"timeout": 3, "http_501": 1, "http_502": 1}
    assert merged.slot_seconds == Sketch.of([0.01, 0.5, 0.02, 1.0])
    assert merged.accepted == AcceptedMoments.of([(10.0, 4.0), (20.0, 8.0)])
    assert merged.by_traffic == {
        "code/greedy/short": GroupEvidence(AcceptedMoments.of([(5.0, 2.0), (10.0, 2.0)])),
        "chat/low/long": GroupEvidence(
            AcceptedMoments.of([(3.0, 1.0)]), AcceptedMoments.of([(9.0, 6.0)]), 3
        ),
        "chat/low/short": GroupEvidence(
            AcceptedMoments.of([(3.0, 1.0)]), AcceptedMoments.of([(9.0, 6.0)]), 3
        ),
    }
    assert merged.last_error == "error 2"
    # requests in flight at one instant: two shards' snapshots add up
    assert merged.in_flight is not None and merged.in_flight.count == 4
    assert merged.in_flight.open_gaps_over(0.5) == (2.0, 1.0)
    window = LatencySamples(blocks=(_full(1), _full(2)), window_seconds=4.0, shards=1)
    # ... while over a window only the newest block's snapshot is in flight now
    assert window.in_flight == _full(2).in_flight
    now = dataclasses.replace(merged, in_flight=_full(2).in_flight)
    assert dataclasses.replace(window.total, start=100.0, seconds=2.0) == now


def test_an_older_pods_block_without_the_new_fields_parses_and_a_broken_one_does_not() -> None:
    wire = block_to_wire(_full(1))
    for key in ("slotSeconds", "failures", "stalls", "byTraffic", "inFlight"):
        del wire[key]
    old = block_from_wire(wire)
    assert old.failures == {} and old.stalls == 0 and old.slot_seconds.total == 0
    assert old.by_traffic == {}
    assert old.in_flight is None  # unknown, not "nothing in flight"
    assert old.requests_failed == 3
    del wire["perChunkItl"]  # a field of the first schema is still required
    with pytest.raises(ReportError, match="perChunkItl"):
        block_from_wire(wire)
    with pytest.raises(ReportError, match="failures"):
        block_from_wire({**block_to_wire(_full(1)), "failures": {"timeout": -1}})
    with pytest.raises(ReportError, match="inFlight"):
        block_from_wire({**block_to_wire(_full(1)), "inFlight": {"count": 0, "open": [[1, 2]]}})
    with pytest.raises(ReportError, match="openGap"):
        block_from_wire({**block_to_wire(_full(1)), "inFlight": {"count": 1, "open": [[1, 2]]}})
    stream = block_to_wire(_full(1))["accepted"]
    with pytest.raises(ReportError, match="not class/temperature/length"):
        block_from_wire({**block_to_wire(_full(1)), "byTraffic": {"a b": {"stream": stream}}})


def test_status_shows_each_sides_outcomes_stalls_and_slot_time() -> None:
    ok = LatencyBlock(start=0.0, seconds=2.0, requests_ok=40, slot_seconds=Sketch.of([2.0]))
    bad = LatencyBlock(
        start=0.0,
        seconds=2.0,
        requests_ok=36,
        requests_failed=4,
        failures={"http_503": 3, "timeout": 1},
        stalls=4,
        slot_seconds=Sketch.of([0.01, 0.01, 0.01, 120.0]),
    )
    base = LatencySamples(blocks=(ok,), shards=1)
    cand = LatencySamples(blocks=(bad,), shards=1)
    summary = load_status(StageObservations("s", baseline_latency=base, candidate_latency=cand))
    assert summary is not None
    assert summary.outcomes[1].startswith("candidate: 36 ok, 3 http_503, 1 timeout; 4 stalls")
    assert summary.outcomes[0].startswith("baseline: 40 ok; 0 stalls; slot P99 2.0")
    hung = InFlight.of([OpenRequest(30.0, 12.34), OpenRequest(1.0, 0.02)], 45.0)
    now = dataclasses.replace(bad, start=2.0, in_flight=hung)
    later = LatencySamples(blocks=(bad, now), shards=1)
    summary = load_status(StageObservations("s", baseline_latency=base, candidate_latency=later))
    assert summary is not None
    assert summary.outcomes[1].endswith("; 2 in flight, longest silent 12.3 s"), summary
