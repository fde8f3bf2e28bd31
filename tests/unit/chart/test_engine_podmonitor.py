"""The engine PodMonitor: "auto" (the default) renders it where the cluster serves the
Prometheus Operator's PodMonitor kind; true and false force it."""

from __future__ import annotations

from typing import Any

import pytest
from admission_policy_cel import find_helm, render_chart

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(find_helm() is None, reason="no helm: run `make binaries`"),
]

SERVED = "--api-versions=monitoring.coreos.com/v1/PodMonitor"


def monitors(*values: str) -> list[dict[str, Any]]:
    helm = find_helm()
    assert helm is not None
    return [doc for doc in render_chart(helm, *values) if doc["kind"] == "PodMonitor"]


@pytest.mark.parametrize(
    ("values", "rendered"),
    [
        ((), False),  # auto, and the kind is not served (plain Prometheus, or none)
        ((SERVED,), True),  # auto, and the Prometheus Operator's CRDs are installed
        (("--set=monitoring.enginePodMonitor.enabled=true",), True),
        ((SERVED, "--set=monitoring.enginePodMonitor.enabled=false"), False),
        ((SERVED, "--set=monitoring.enginePodMonitor.enabled=auto"), True),
    ],
)
def test_auto_follows_the_served_kind_and_a_boolean_forces_it(
    values: tuple[str, ...], rendered: bool
) -> None:
    found = monitors(*values)
    assert len(found) == (1 if rendered else 0)
    if found:
        selector = found[0]["spec"]["selector"]["matchLabels"]
        assert selector == {"app.kubernetes.io/managed-by": "specdecode-operator"}


def test_the_grace_reaches_the_operator() -> None:
    helm = find_helm()
    assert helm is not None
    docs = render_chart(helm, "--set=operator.engineScrapeGraceSeconds=60")
    deployment = next(doc for doc in docs if doc["kind"] == "Deployment")
    env = {
        e["name"]: e.get("value")
        for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["SPECDECODE_ENGINE_SCRAPE_GRACE_SECONDS"] == "60"
