"""The terminal gate table: what the demo and the kubectl plugin print from a status."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from specdecode.report import gate_table

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 21, 5, 0, 30, tzinfo=UTC)
ROLLOUT = {
    "metadata": {"namespace": "demo", "name": "llama"},
    "status": {
        "phase": "Analyzing",
        "currentStage": "tail-latency",
        "message": "stage tail-latency started",
        "stages": [
            {
                "name": "acceptance",
                "phase": "Successful",
                "startedAt": "2026-11-21T04:58:00Z",
                "finishedAt": "2026-11-21T04:59:00Z",
                "gates": [
                    {
                        "name": "alpha",
                        "verdict": "Successful",
                        "value": 0.691,
                        "lowerBound": 0.557,
                        "upperBound": 0.824,
                        "threshold": 0.55,
                        "samples": 2829,
                        "reason": "alpha 0.691 [0.557, 0.824] >= 0.55",
                    }
                ],
            },
            {
                "name": "tail-latency",
                "phase": "Running",
                "startedAt": "2026-11-21T05:00:00Z",
                "gates": [{"name": "p99-itl", "verdict": "Inconclusive", "dryRun": True}],
            },
        ],
    },
}


def test_one_row_per_gate_with_bounds_time_in_stage_and_verdicts() -> None:
    lines = gate_table(ROLLOUT, now=NOW).splitlines()
    assert lines[0] == "demo/llama: phase Analyzing  stage tail-latency  verdict -"
    assert lines[1] == "  stage tail-latency started"
    assert lines[2].split() == [
        "STAGE",
        "STATE",
        "IN-STAGE",
        "GATE",
        "VERDICT",
        "VALUE",
        "BOUNDS",
        "THRESHOLD",
        "SAMPLES",
        "REASON",
    ]
    done = lines[3].split()
    assert done[:5] == ["acceptance", "Successful", "done", "alpha", "Successful"]
    assert "0.691  [0.557, 0.824]  0.550      2829" in lines[3]
    running = lines[4].split()
    assert running[:6] == ["tail-latency", "Running", "30s", "p99-itl", "(dry-run)", "Inconclusive"]


def test_a_rollout_without_status_prints_its_name_only() -> None:
    text = gate_table({"metadata": {"namespace": "ns", "name": "r"}})
    assert text == "ns/r: phase -  stage -  verdict -"


def test_the_candidates_acceptance_by_traffic_is_shown_after_the_verdict() -> None:
    split = [
        {
            "trafficClass": "code",
            "temperature": "greedy",
            "outputLength": "short",
            "requests": 120,
            "steps": 9000,
            "acceptedPerStep": 1.62,
            "alpha": 0.54,
            "lowerBound": 0.5,
            "upperBound": 0.58,
            "basis": "Stream",
        },
        {
            "trafficClass": "translation",
            "temperature": "high",
            "outputLength": "long",
            "requests": 30,
            "steps": 12000,
            "acceptedPerStep": 0.3,
            "alpha": 0.1,
            "lowerBound": 0.07,
            "upperBound": 0.13,
            "basis": "Stream",
        },
    ]
    stage = {**ROLLOUT["status"]["stages"][0], "load": {"acceptanceByTraffic": split}}  # type: ignore[index]
    rolled_back = {
        "metadata": ROLLOUT["metadata"],
        "status": {"phase": "RolledBack", "stages": [stage]},
    }
    lines = gate_table(rolled_back, now=NOW).splitlines()
    at = lines.index("  candidate acceptance by traffic (stage acceptance):")
    assert lines[at + 1].split() == [
        "CLASS",
        "TEMPERATURE",
        "LENGTH",
        "ALPHA",
        "BOUNDS",
        "ACCEPTED/STEP",
        "REQUESTS",
        "BASIS",
    ]
    assert lines[at + 3].split() == [
        "translation",
        "high",
        "long",
        "0.100",
        "[0.070,",
        "0.130]",
        "0.30",
        "30",
        "Stream",
    ]
