"""The `make demo` scenarios: which rollout each applies and which verdict it must reach.

Pure (no cluster): `localcluster.demo` runs a scenario, and tests/unit/report/
test_demo_scenarios.py pins the manifests and the verdict rule. Two things vary between
scenarios and are written once each: the traffic (the simulator example on Prompts, Mirror
through the splitter with the Prompts demo's own gates, Mirror with server-side gates, or
the real vLLM) and the draft head (the example's, or a weak one in `rollback` and
`mirror-rollback`). A weak head must be rolled back by a Failed gate: a rollback on
Inconclusive gates only says the analysis could not tell, not that the head is weak. So must
`real`'s candidate, a draft that agrees with its target but costs 8x its depth.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from localcluster import realvllm
from localcluster.manifests import load_example, merged
from localcluster.mirror_scenario import mirror_rollout, splitter_demo_rollout
from localcluster.progress import gates_with_verdict

# mirror: the splitter times both shadows' streams, so the example's gates judge as under
# Prompts. mirror-serverside: alpha alone never promotes, and vLLM's coarse step histogram
# cannot show that the candidate's P99 step is no slower, so that gate ends Inconclusive.
ENDINGS = {"Promoted", "RolledBack", "Failed"}
EXPECTED = {
    "promote": "Promoted",
    "rollback": "RolledBack",
    "mirror": "Promoted",
    "mirror-rollback": "RolledBack",
    "mirror-serverside": "RolledBack",
    "real": "RolledBack",
}
MIRROR_SCENARIOS = {"mirror", "mirror-rollback", "mirror-serverside"}
WEAK_HEAD_SCENARIOS = {"rollback", "mirror-rollback"}
REJECTED_BY_A_GATE = WEAK_HEAD_SCENARIOS | {"real"}
WEAK_DRAFT_HEAD = [{"name": "SPECDECODE_SIM_ACCEPTANCE", "value": "0.2"}]  # alpha 0.08 at k=3
TRAFFIC: dict[str, Callable[[], dict[str, Any]]] = {
    "mirror": splitter_demo_rollout,
    "mirror-rollback": splitter_demo_rollout,
    "mirror-serverside": mirror_rollout,
    "real": realvllm.demo_rollout,
}


def scenario_manifest(scenario: str) -> dict[str, Any]:
    """The scenario's rollout: its traffic's manifest (the simulator example's by default),
    with the weak draft head in the weak-head scenarios."""
    manifest = TRAFFIC.get(scenario, load_example)()
    if scenario in WEAK_HEAD_SCENARIOS:
        env = list(manifest["spec"]["engine"].get("env", [])) + WEAK_DRAFT_HEAD
        manifest = merged(manifest, {"spec": {"engine": {"env": env}}})
    return manifest


def as_expected(scenario: str, document: Mapping[str, Any]) -> bool:
    """Whether the rollout ended as the scenario must: the expected phase, and where the
    candidate is a loss (a weak head, or `real`'s costly draft) at least one Failed gate."""
    phase = (document.get("status") or {}).get("phase")
    if phase != EXPECTED[scenario]:
        return False
    return scenario not in REJECTED_BY_A_GATE or bool(gates_with_verdict(document, "Failed"))
