"""Mirror traffic through the splitter is judged like Prompts traffic; ServerSide is not.

Issue 34: with Splitter pairing the splitter's per-side reports carry the same client-side
evidence the load pods do, so a stage's gates declare the load pods' needs (not the
engines' counters) and the look is not a Mirror look; the stage's status says which
evidence its verdicts rest on. Control: before, every Mirror look was a server-side one
(`look_plan(...).mirror` True, ENGINE_OUTCOMES for ErrorRate, Speedup not judged).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from specdecode.adapters.gate_boundary import observations_needed
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.status import Evidence
from specdecode.domain.analyzing import begin_stage, look_plan
from specdecode.domain.gates.registry import LOAD_REPORT_NEEDS, Need
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.stages import fresh_stages
from specdecode.reconciler.rollout_boundary import settings_of

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = yaml.safe_load((REPO / "examples" / "specdecode-rollout.yaml").read_text())["spec"]


def spec_with(traffic: dict[str, Any]) -> SpecDecodeRolloutSpec:
    spec = {**EXAMPLE, "analysis": {**EXAMPLE["analysis"], "traffic": traffic}}
    return SpecDecodeRolloutSpec.model_validate(spec)


SPLITTER = spec_with({"source": "Mirror", "httpRoute": "llm"})  # the default pairing
WITHOUT_ROUTE = spec_with({"source": "Mirror"})  # fed by any mirror or tee, no gateway
PROMPTS = spec_with({})
MIRROR_EXAMPLE = list(yaml.safe_load_all((REPO / "examples" / "mirror.yaml").read_text()))[-1]
SPLITTER_EXAMPLE = SpecDecodeRolloutSpec.model_validate(MIRROR_EXAMPLE["spec"])


def server_side() -> SpecDecodeRolloutSpec:
    """The Mirror example with ServerSide pairing and the gates that pairing can judge."""
    tail = {"name": "p99-step-itl", "type": "TailLatency", "itlDefinition": "ServerStep"}
    stages = [
        {**stage, "gates": [g for g in stage["gates"] if g["type"] in ("Acceptance", "ErrorRate")]}
        for stage in MIRROR_EXAMPLE["spec"]["analysis"]["stages"]
    ]
    stages[-1]["gates"].append(tail)
    analysis = MIRROR_EXAMPLE["spec"]["analysis"]
    traffic = {**analysis["traffic"], "mirrorPairing": "ServerSide"}
    spec = {
        **MIRROR_EXAMPLE["spec"],
        "analysis": {**analysis, "traffic": traffic, "stages": stages},
    }
    return SpecDecodeRolloutSpec.model_validate(spec)


SERVER_SIDE = server_side()


def test_a_splitter_stage_is_judged_on_client_side_evidence() -> None:
    for spec in (SPLITTER, WITHOUT_ROUTE, SPLITTER_EXAMPLE):
        assert not look_plan(settings_of(spec), 0, 0.0).mirror
        for index in range(len(spec.analysis.stages)):
            needs = observations_needed(spec, index)
            if spec is not SPLITTER_EXAMPLE:  # the same gates as PROMPTS, judged alike
                assert needs == observations_needed(PROMPTS, index)
            assert Need.CLIENT_LATENCY in needs or index == 0
    assert any(observations_needed(SPLITTER, i) & LOAD_REPORT_NEEDS for i in range(2))


def test_server_side_pairing_keeps_the_engines_evidence() -> None:
    assert look_plan(settings_of(SERVER_SIDE), 0, 0.0).mirror
    needs = frozenset().union(
        *(observations_needed(SERVER_SIDE, i) for i in range(len(SERVER_SIDE.analysis.stages)))
    )
    assert Need.ENGINE_OUTCOMES in needs and Need.CLIENT_LATENCY not in needs


def test_the_stage_status_names_its_evidence() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    expected = {
        Evidence.CLIENT_SIDE_PAIRED: SPLITTER,
        Evidence.CLIENT_SIDE_REPLAYED: PROMPTS,
        Evidence.SERVER_SIDE: SERVER_SIDE,
    }
    for evidence, spec in expected.items():
        settings = settings_of(spec)
        status = RolloutState(stages=fresh_stages(settings.stages))
        assert begin_stage(settings, status, 0, now).stages[0].evidence is evidence
