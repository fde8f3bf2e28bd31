"""The demo's scenarios are the rollouts they claim to be, and valid ones.

`make demo SCENARIO=mirror` once built a ServerSide rollout with gates of its own and
expected RolledBack; issue 34's splitter lets it judge the Prompts demo's own gates on
mirrored live traffic and promote. The e2e proof is the demo run itself; this pins the
manifests so that a scenario cannot drift back to other gates or another pairing unseen.
"""

from __future__ import annotations

import pytest

from localcluster.demo import EXPECTED, MIRROR_SCENARIOS, scenario_manifest
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
    assert {"mirror", "mirror-serverside"} == MIRROR_SCENARIOS
