"""Engine pods carry no Kubernetes credentials and no privileges the engine does not need.

vLLM never talks to the API server, so no ServiceAccount token is mounted; no privilege
escalation, no capabilities, the runtime's default seccomp profile. Resources and GPU
requests are the spec's, unchanged by the hardening.
"""

from __future__ import annotations

import pytest
from render_cases import UID, example_spec

from specdecode.adapters.render import render_children
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.domain.decision import DesiredChildren

pytestmark = pytest.mark.unit

FULL = example_spec("examples/specdecode-rollout.yaml")


@pytest.mark.parametrize("shadows", [True, False])
def test_every_engine_pod_is_hardened(shadows: bool) -> None:
    desired = DesiredChildren(
        production=None, shadows=shadows, candidate=setting_of(FULL.speculative)
    )
    deployments = [
        o
        for o in render_children("llama", "team-a", UID, FULL, desired)
        if o["kind"] == "Deployment"
    ]
    assert len(deployments) == (3 if shadows else 1)
    for deployment in deployments:
        pod = deployment["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
        for container in pod["containers"]:
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "privileged": False,
                "capabilities": {"drop": ["ALL"]},
            }
            assert "nvidia.com/gpu" in container["resources"]["limits"]
