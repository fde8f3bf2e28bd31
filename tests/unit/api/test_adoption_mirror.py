"""Issue 34 item 5: an adopted Deployment (workloadRef) may take live shadow traffic through
the splitter, which needs nothing of the owner's route; telling the operator a route
(`httpRoute`) or asking for ServerSide pairing (a mirror per shadow, written on that route)
stays refused, by the models and by the generated CRD (schema + CEL, offline) alike."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from sdr_crd_checker import CrdChecker

from localcluster.manifests import REPO
from specdecode.api import SpecDecodeRollout
from specdecode.tools.crdgen import output_paths

pytestmark = pytest.mark.unit

EAGLE3 = {
    "method": "eagle3",
    "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "num_speculative_tokens": 3,
}
SERVER_SIDE_GATES = [
    {"name": "alpha", "type": "Acceptance"},
    {"name": "itl", "type": "TailLatency", "itlDefinition": "ServerStep"},
    {"name": "errors", "type": "ErrorRate"},
]


@pytest.fixture(scope="module")
def checker() -> CrdChecker:
    crd = yaml.safe_load(output_paths(REPO)[0].read_text())
    return CrdChecker(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def adopted(traffic: dict[str, Any], stages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    analysis: dict[str, Any] = {"traffic": traffic}
    if stages is not None:
        analysis["stages"] = stages
    return {
        "apiVersion": "specdecode.io/v1alpha1",
        "kind": "SpecDecodeRollout",
        "metadata": {"name": "chat-eagle3", "namespace": "default"},
        "spec": {"workloadRef": {"name": "chat"}, "speculative": EAGLE3, "analysis": analysis},
    }


@pytest.mark.parametrize(
    "traffic",
    [{"source": "Mirror"}, {"source": "Mirror", "mirrorPairing": "Splitter"}],
    ids=["default-pairing", "splitter"],
)
def test_an_adopted_deployment_takes_mirror_through_the_splitter(
    traffic: dict[str, Any], checker: CrdChecker
) -> None:
    manifest = adopted(traffic)
    parsed = SpecDecodeRollout.model_validate(manifest)
    assert parsed.spec.analysis.traffic.splitter_mirror
    assert parsed.spec.analysis.traffic.http_route is None
    assert checker.errors(manifest) == []


@pytest.mark.parametrize(
    ("traffic", "stages", "field", "fragment"),
    [
        (
            {"source": "Mirror", "httpRoute": "llm"},
            None,
            "spec.analysis.traffic.httpRoute",
            "mirror to Service <rollout name>-splitter port 8080 from your own route",
        ),
        (
            {"source": "Mirror", "mirrorPairing": "ServerSide", "httpRoute": "llm"},
            [{"name": "acc", "gates": SERVER_SIDE_GATES}],
            "spec.analysis.traffic.mirrorPairing",
            "workloadRef: Mirror with mirrorPairing ServerSide needs a mirror per shadow",
        ),
    ],
    ids=["http-route", "server-side"],
)
def test_an_adopted_deployment_never_hands_the_operator_its_route(
    traffic: dict[str, Any],
    stages: list[dict[str, Any]] | None,
    field: str,
    fragment: str,
    checker: CrdChecker,
) -> None:
    manifest = adopted(traffic, stages)
    with pytest.raises(ValidationError, match="workloadRef") as caught:
        SpecDecodeRollout.model_validate(manifest)
    assert any(fragment in error["msg"] for error in caught.value.errors()), caught.value
    refused = checker.errors(manifest)
    assert any(fragment in str(e) and field in str(e) for e in refused), refused
