"""The demo's scenarios are the rollouts they claim to be, and valid ones.

`make demo SCENARIO=mirror` once built a ServerSide rollout with gates of its own and
expected RolledBack; issue 34's splitter lets it judge the Prompts demo's own gates on
mirrored live traffic and promote, and `SCENARIO=mirror-rollback` puts the rollback
scenario's weak head on the same mirrored traffic. The e2e proof is the demo run itself;
this pins the manifests so that a scenario cannot drift back to other gates or another
pairing unseen, and the rule that a weak head counts as rejected only by a Failed gate.
"""

from __future__ import annotations

import pytest

from localcluster.demo_scenarios import (
    EXPECTED,
    MIRROR_SCENARIOS,
    WEAK_DRAFT_HEAD,
    as_expected,
    scenario_manifest,
)
from localcluster.manifests import load_example
from localcluster.mirror_scenario import ROUTE
from specdecode.api import SpecDecodeRollout

pytestmark = pytest.mark.unit


def gates_by_stage(manifest: dict[str, object]) -> dict[str, list[dict[str, object]]]:
    stages = manifest["spec"]["analysis"]["stages"]  # type: ignore[index]
    return {stage["name"]: stage["gates"] for stage in stages}


@pytest.mark.parametrize("scenario", sorted(EXPECTED.keys() - {"real"}))
def test_every_simulator_scenario_is_a_valid_rollout(scenario: str) -> None:
    SpecDecodeRollout.model_validate(scenario_manifest(scenario))


def test_the_mirror_demo_judges_the_prompts_demos_gates_through_the_splitter() -> None:
    manifest = scenario_manifest("mirror")
    traffic = manifest["spec"]["analysis"]["traffic"]
    assert traffic["source"] == "Mirror"
    assert traffic["mirrorPairing"] == "Splitter"
    assert traffic["httpRoute"] == ROUTE
    assert gates_by_stage(manifest) == gates_by_stage(load_example())
    # the live users set the load: no stage carries a concurrency nothing would obey
    assert all("concurrency" not in s for s in manifest["spec"]["analysis"]["stages"])
    assert EXPECTED["mirror"] == "Promoted"


def test_the_serverside_mirror_demo_stays_reachable_and_expects_its_rollback() -> None:
    traffic = scenario_manifest("mirror-serverside")["spec"]["analysis"]["traffic"]
    assert traffic["mirrorPairing"] == "ServerSide"
    assert EXPECTED["mirror-serverside"] == "RolledBack"
    assert {"mirror", "mirror-rollback", "mirror-serverside"} == MIRROR_SCENARIOS


def test_the_mirror_rollback_demo_is_the_mirror_demo_with_the_rollback_demos_weak_head() -> None:
    manifest = scenario_manifest("mirror-rollback")
    assert manifest["spec"]["analysis"] == scenario_manifest("mirror")["spec"]["analysis"]
    assert gates_by_stage(manifest) == gates_by_stage(load_example())
    assert manifest["spec"]["engine"] == scenario_manifest("rollback")["spec"]["engine"]
    assert all(v in manifest["spec"]["engine"]["env"] for v in WEAK_DRAFT_HEAD)
    assert EXPECTED["mirror-rollback"] == "RolledBack"


def ended(phase: str, *verdicts: str) -> dict[str, object]:
    gates = [{"name": f"g{i}", "verdict": v} for i, v in enumerate(verdicts)]
    return {"status": {"phase": phase, "stages": [{"name": "acceptance", "gates": gates}]}}


@pytest.mark.parametrize("scenario", ["rollback", "mirror-rollback", "real"])
def test_a_losing_candidate_counts_as_rejected_only_by_a_failed_gate(scenario: str) -> None:
    assert as_expected(scenario, ended("RolledBack", "Passed", "Failed"))
    assert not as_expected(scenario, ended("RolledBack", "Inconclusive", "Pending"))
    assert not as_expected(scenario, ended("Promoted", "Passed"))


def test_other_scenarios_judge_the_phase_alone() -> None:
    assert as_expected("mirror-serverside", ended("RolledBack", "Passed", "Inconclusive"))
    assert as_expected("mirror", ended("Promoted", "Passed"))
    assert not as_expected("mirror", ended("Timeout"))
    assert not as_expected("mirror", ended("RolledBack", "Inconclusive"))


def test_the_real_demo_judges_a_draft_that_agrees_with_its_target_but_costs_8x_its_depth() -> None:
    """Issue 36: the real-engine demo must end decided. Its candidate is `draft-heavy`
    (make_models.py: the target's layers then zero-output ones), whose loss is measured."""
    manifest = scenario_manifest("real")
    speculative = manifest["spec"]["speculative"]
    assert speculative["method"] == "draft_model"
    assert speculative["model"].endswith("/draft-heavy")
    gates = gates_by_stage(manifest)
    assert {"name": "tpot-speedup", "type": "Speedup"} in gates["tail-latency"]
    assert EXPECTED["real"] == "RolledBack"
