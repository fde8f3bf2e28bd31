"""The PrometheusRule's alerts and the RBAC rules, checked against what the code really does.

Alert expressions must select metrics the operator exports. RBAC rules are derived
independently from the operator's source (every Kubernetes client call) plus what kopf
needs, and must match the chart's rules exactly: nothing missing, nothing extra, no
wildcards, and no list or watch on Secrets.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_metrics import metrics_in, operator_metric_names

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "specdecode-operator"
OPERATOR_SOURCE = REPO / "operator" / "specdecode"
CLIENT_CALL = re.compile(
    r"\.(list|read|patch|delete|create|replace)_namespaced_(\w+?)\(\s*(ROUTE_GROUP)?"
)
VERB = {
    "list": "list",
    "read": "get",
    "patch": "patch",
    "delete": "delete",
    "create": "create",
    "replace": "update",
}
RESOURCE = {
    "config_map": ("", "configmaps"),
    "secret": ("", "secrets"),
    "deployment": ("apps", "deployments"),
    "service": ("", "services"),
    "pod": ("", "pods"),
    "endpoint_slice": ("discovery.k8s.io", "endpointslices"),
    "custom_object": ("specdecode.io", "specdecoderollouts"),
    "custom_object_status": ("specdecode.io", "specdecoderollouts/status"),
    "custom_objectROUTE_GROUP": ("gateway.networking.k8s.io", "httproutes"),
    "event": ("", "events"),
    "lease": ("coordination.k8s.io", "leases"),
}
# Granted by a Role in the operator's own namespace, not in the watched namespaces.
LEADER_ELECTION = {("coordination.k8s.io", "leases")}
# Templates of server-side-applied children; load pods are created (a client call, counted
# above), never applied, so their template adds nothing here.
# Custom objects: the plural constant the call passes names the resource.
CUSTOM_CALL = re.compile(
    r"\.(list|read|patch|delete|create|replace)_namespaced_custom_object(_status)?\(\s*"
    r"GROUP,\s*VERSION,\s*\w+,\s*(\w+)"
)
PLURALS = {"PLURAL": "specdecoderollouts", "TUNING_PLURAL": "specdecodetunings"}
TEMPLATE_KINDS = {
    "deployment": ("apps", "deployments"),
    "service": ("", "services"),
    "load-pod": None,
    "splitter": ("apps", "deployments"),  # the Mirror splitter, applied like the engines
}
# What kopf itself does: list+watch the served resource and the watched children (the
# operator's cache, handlers/watches.py), patch its progress annotations, post Events.
KOPF = {
    ("specdecode.io", "specdecoderollouts"): {"list", "watch", "patch"},
    ("specdecode.io", "specdecodetunings"): {"list", "watch", "patch"},
    ("", "events"): {"create"},
    ("apps", "deployments"): {"list", "watch"},
    ("", "services"): {"list", "watch"},
    ("", "pods"): {"list", "watch"},
    ("gateway.networking.k8s.io", "httproutes"): {"list", "watch"},
}
Rules = dict[tuple[str, str], set[str]]


def defined_block(name: str) -> str:
    text = (CHART / "templates" / "_helpers.tpl").read_text()
    match = re.search(r'define "' + re.escape(name) + r'" -\}\}\n(.*?)\{\{- end \}\}', text, re.S)
    assert match, name
    return match.group(1)


def rules_of(block: str) -> Rules:
    rules: Rules = defaultdict(set)
    for rule in yaml.safe_load(block):
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                rules[(group, resource)].update(rule["verbs"])
    return dict(rules)


def derived_from_code() -> Rules:
    needed: Rules = defaultdict(set)
    for key, verbs in KOPF.items():
        needed[key].update(verbs)
    for path in OPERATOR_SOURCE.rglob("*.py"):
        if path.name.startswith("kubectl_"):  # the plugin runs as the user, not the operator
            continue
        source = path.read_text()
        for verb, kind, group in CLIENT_CALL.findall(source):
            if kind.startswith("custom_object") and not group:
                continue  # read by CUSTOM_CALL, which sees which plural
            needed[RESOURCE[kind + group]].add(VERB[verb])
        for verb, status, plural in CUSTOM_CALL.findall(source):
            needed[("specdecode.io", PLURALS[plural] + ("/status" if status else ""))].add(
                VERB[verb]
            )
        if '"kind": "ConfigMap"' in source and ".server_side_apply(" in source:
            needed[("", "configmaps")].update({"create", "patch"})  # the tuning's report
        if ".server_side_apply(" in source and "def server_side_apply" not in source:
            # Server-side apply is a PATCH, and a create when the object is absent.
            for template in (OPERATOR_SOURCE / "adapters" / "templates").glob("*.yaml.j2"):
                applied = TEMPLATE_KINDS[template.name.split(".")[0]]
                if applied is not None:
                    needed[applied].update({"create", "patch"})
    return dict(needed)


def test_namespaced_rules_are_exactly_what_the_code_uses() -> None:
    derived = {k: v for k, v in derived_from_code().items() if k not in LEADER_ELECTION}
    assert rules_of(defined_block("specdecode-operator.namespacedRules")) == derived


def test_leader_election_rules_are_exactly_what_the_code_uses() -> None:
    derived = {k: v for k, v in derived_from_code().items() if k in LEADER_ELECTION}
    assert derived, "the Lease calls were not found in the source"
    assert rules_of(defined_block("specdecode-operator.leaderElectionRules")) == derived


def test_no_wildcards_and_secrets_are_never_listed_or_changed() -> None:
    rbac_text = (CHART / "templates" / "_helpers.tpl").read_text()
    assert '"*"' not in rbac_text and "'*'" not in rbac_text
    rules = rules_of(defined_block("specdecode-operator.namespacedRules"))
    assert rules[("", "secrets")] == {"get", "create"}  # no list, watch or update


def test_discovery_rules_are_read_only() -> None:
    block = re.sub(
        r"\{\{-? (?:if|end)[^}]*\}\}\n?", "", defined_block("specdecode-operator.discoveryRules")
    )
    rules = rules_of(block)
    assert rules == {
        ("apiextensions.k8s.io", "customresourcedefinitions"): {"list", "watch"},
        ("", "namespaces"): {"list", "watch"},
    }


@pytest.fixture(scope="module")
def alert_expressions() -> dict[str, str]:
    text = (CHART / "templates" / "prometheusrule.yaml").read_text()
    pairs = re.findall(r"- alert: (\w+)\n(?:\s+#.*\n)*\s+expr: (.+)", text)
    return {name: re.sub(r"\{\{[^}]*\}\}", '".*"', expr) for name, expr in pairs}


def test_alert_expressions_use_exported_metrics(alert_expressions: dict[str, str]) -> None:
    known = operator_metric_names() | {"up"}
    for name, expression in alert_expressions.items():
        used = metrics_in(expression) | ({"up"} if "up{" in expression else set())
        assert used and used <= known, f"{name}: {sorted(used - known)}"


@pytest.mark.parametrize(
    ("alert", "fragment"),
    [
        ("SpecDecodeGateFailed", 'specdecode_gate_verdict{verdict="Failed"}'),
        ("SpecDecodeRolloutStuck", "specdecode_rollout_phase{phase=~"),
        ("SpecDecodeRolledBack", "time() - max by (namespace, rollout, reason)"),
        ("SpecDecodeOperatorDown", "absent(up{job=~"),
        ("SpecDecodeGateErrors", 'specdecode_gate_verdict{verdict="Error"}) == 1'),
        ("SpecDecodeLoadSaturated", "(specdecode_load_saturated) == 1"),
    ],
)
def test_required_alerts(alert_expressions: dict[str, str], alert: str, fragment: str) -> None:
    assert fragment in alert_expressions[alert].replace(")) > 0", ") > 0")


@pytest.mark.parametrize("alert", ["SpecDecodeGateErrors", "SpecDecodeLoadSaturated"])
def test_alerts_of_a_running_stage_end_with_it(
    alert_expressions: dict[str, str], alert: str
) -> None:
    """A rollout keeps its deciding stage's series after the verdict (so GateFailed can
    fire); errors and saturation are only news while that stage still runs."""
    assert "and on (namespace, rollout)" in alert_expressions[alert]
    assert 'specdecode_rollout_phase{phase=~"Analyzing' in alert_expressions[alert] or (
        'specdecode_rollout_phase{phase="Analyzing"}' in alert_expressions[alert]
    )


def test_every_alert_has_its_runbook_line(alert_expressions: dict[str, str]) -> None:
    """Each alert's runbook_url points at the docs' On call page: one row each."""
    on_call = (REPO / "docs" / "on-call.md").read_text()
    assert on_call.startswith("# On call\n")  # the page's anchor, #on-call
    rows = set(re.findall(r"^\| (SpecDecode\w+) \|", on_call, flags=re.MULTILINE))
    assert rows == set(alert_expressions)
    rules = (CHART / "templates" / "prometheusrule.yaml").read_text()
    assert rules.count("runbook_url:") == len(alert_expressions)
    assert 'printf "%s#on-call"' in rules


def test_values_schema_accepts_the_default_values() -> None:
    import json

    schema: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
    values: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    assert set(values) <= set(schema["properties"])
    for key, value in values.items():
        if schema["properties"][key].get("type") == "object" and isinstance(value, dict):
            allowed = schema["properties"][key].get("properties")
            if allowed is not None:
                assert set(value) <= set(allowed), key
