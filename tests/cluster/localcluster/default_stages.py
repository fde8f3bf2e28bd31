"""Rollouts on the default analysis, and reading their gates: for the verdict e2e tests
(`test_verdicts`, the fault pair included), which judge simulated engines with no stage or
gate of their own, so what they assert is what the defaults decide."""

from __future__ import annotations

import copy
from typing import Any

from localcluster.manifests import load_example

EAGLE3_HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
TERMINAL = ("Promoted", "RolledBack", "Failed")


def default_stages_rollout(
    workload: str,
    speculative: dict[str, Any],
    env: list[dict[str, str]] | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The simulator example with the default analysis: only the traffic is set (the
    workload class, and `max_tokens` per request if given).

    GB10-profile engines (80 ms steps) by default: on L40S steps this 2-core machine's load
    clients lag more than a look allows (see tests/e2e/test_verdicts.py).
    """
    manifest: dict[str, Any] = copy.deepcopy(load_example())
    spec = manifest["spec"]
    spec["engine"]["env"] = [{"name": "SPECDECODE_SIM_GPU", "value": "GB10"}, *(env or [])]
    spec["speculative"] = speculative
    traffic: dict[str, Any] = {"builtinWorkload": workload}
    if max_tokens is not None:
        traffic["maxTokens"] = max_tokens
    spec["analysis"] = {"traffic": traffic}
    return manifest


def gates_of(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`stage/gate` -> the gate's status, for every stage that ran."""
    return {
        f"{stage['name']}/{gate['name']}": gate
        for stage in status.get("stages", [])
        for gate in stage.get("gates", [])
    }


def summary(name: str, status: dict[str, Any]) -> str:
    """The phase, message and every gate's verdict and bounds, for the test log."""
    lines = [f"{name}: {status.get('phase')} - {status.get('message', '')}"]
    for key, gate in gates_of(status).items():
        lines.append(
            f"  {key}: {gate.get('verdict')} value {gate.get('value')} "
            f"[{gate.get('lowerBound')}, {gate.get('upperBound')}] n={gate.get('samples')}"
        )
    return "\n".join(lines)
