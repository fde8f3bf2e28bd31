"""The chart's NetworkPolicy admits only the operator to the load pods' control port: it
must select the labels the operator puts on load pods and the port they listen on."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from specdecode.adapters.load.pods import LOAD_ROLE
from specdecode.adapters.load.splitter import SPLITTER_ROLE
from specdecode.adapters.render import ROLE_LABEL
from specdecode.domain.load_flags import MIRROR_PORT, REPORT_PORT

pytestmark = pytest.mark.unit

CHART = Path(__file__).resolve().parents[3] / "charts" / "specdecode-operator"


def test_the_policy_selects_the_load_pods_and_their_control_port() -> None:
    text = (CHART / "templates" / "networkpolicy.yaml").read_text().split("---\n")[1]
    text = text.split("{{- /*")[0]  # up to the splitter's policy
    body = yaml.safe_load(
        "\n".join(line for line in text.splitlines() if "{{" not in line and "}}" not in line)
    )
    assert body["spec"]["podSelector"]["matchLabels"] == {ROLE_LABEL: LOAD_ROLE}
    assert body["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = body["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": REPORT_PORT}]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["networkPolicy"]["loadPods"] is True


def test_the_splitter_policy_selects_the_splitter_its_control_and_mirror_ports() -> None:
    """The splitter's control port admits the operator alone, like the load pods'; its
    mirror port admits `splitterMirrorFrom` (any pod while empty): a policy that selected
    another label or port would leave the splitter open or its mirror blocked."""
    text = (CHART / "templates" / "networkpolicy.yaml").read_text().split("---\n")[2]
    body = yaml.safe_load(
        "\n".join(line for line in text.splitlines() if "{{" not in line and "}}" not in line)
    )
    assert body["spec"]["podSelector"]["matchLabels"] == {ROLE_LABEL: SPLITTER_ROLE}
    control, mirror = body["spec"]["ingress"]
    assert control["ports"] == [{"protocol": "TCP", "port": REPORT_PORT}]
    assert "from" in control  # the operator's pods (the selector is templated)
    assert mirror["ports"] == [{"protocol": "TCP", "port": MIRROR_PORT}]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["networkPolicy"]["splitter"] is True
    assert values["networkPolicy"]["splitterMirrorFrom"] == []
