"""Every rule the CRD carries is a rule written once (`specdecode.api.rules`), and gives the
same verdict in Python and as its rendered CEL (cel-python), rule by rule, on every object
the rule applies to in a corpus: the examples, the vLLM version table, the invalid-input
table and a few boundary objects. The rules are found by walking the generated CRD, so a
rule added anywhere (hand-written CEL included) is covered or fails here."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import celpy
import pytest
import yaml
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError
from sdr_crd_checker import apply_defaults

from localcluster.manifests import REPO as REPO_ROOT
from localcluster.manifests import load_example, load_invalid_cases, merged, rollout_examples
from specdecode.api import vllm_versions as facts
from specdecode.api.engine_args import RESERVED
from specdecode.api.rules import Rule
from specdecode.api.schema import minimum_rule, walk
from specdecode.api.validations import ROOT_RULES, RULES
from specdecode.tools.crdgen import custom_resource_definition

pytestmark = pytest.mark.unit

SCHEMA: dict[str, Any] = custom_resource_definition()["spec"]["versions"][0]["schema"][
    "openAPIV3Schema"
]
TABLE = yaml.safe_load((REPO_ROOT / "tests/data/speculative-versions.yaml").read_text())
VERSIONS = ("0.14.1", "0.20.2", "0.33.0")
MIRROR = {"source": "Mirror", "httpRoute": "llm"}
# Objects near the boundaries the tables do not reach (each rule must hold and break).
BOUNDARY_PATCHES: list[dict[str, Any]] = [
    {"spec": {"speculative": None}},
    {"spec": {"model": {"extraArgs": [o for r in RESERVED for o in r.options]}}},
    {"spec": {"model": {"extraArgs": ["--speculative_config.method=ngram", "-tp=4"]}}},
    {"spec": {"speculative": {"num_speculative_tokens_per_batch_size": [[0, 8, 3]]}}},
    # k = 0 up to the stages' loads (4 and 16) or not: gaps and the end count as speculating
    *(
        {"spec": {"speculative": {"num_speculative_tokens_per_batch_size": schedule}}}
        for schedule in (
            [[1, 2, 0], [5, 4096, 0]],
            [[1, 8, 0]],
            [[1, 4, 0], [5, 16, 0], [17, 4096, 3]],
            [[1, 4, 0], [6, 16, 0], [17, 4096, 3]],
        )
    ),
    {
        "spec": {
            "speculative": {"num_speculative_tokens_per_batch_size": [[1, 4096, 0]]},
            "analysis": {"stages": [{"name": "s", "requestRate": 2.0}]},
        }
    },
    {"spec": {"analysis": {"traffic": {**MIRROR, "requestTimeoutSeconds": 120}}}},
    *(
        {"spec": {"speculative": {"method": method, "model": None if needs else "m/draft"}}}
        for method, needs in ((m, f.needs_model) for m, f in facts.METHODS.items())
        if needs is not None
    ),
    *(
        {"spec": {"engine": {"vllmVersion": version}, "speculative": {field: value}}}
        for field, values in facts.FIELD_VALUES.items()
        for value in values
        for version in VERSIONS
    ),
    {"spec": {"analysis": {"traffic": {**MIRROR, "secretRef": {"name": "p", "key": "k"}}}}},
    {"spec": {"analysis": {"traffic": {**MIRROR, "maxRequestsPerStage": 10}}}},
    {"spec": {"analysis": {"traffic": {**MIRROR, "maxOutputTokensPerStage": 10}}}},
    {"spec": {"analysis": {"stages": [{"name": "s", "requestRate": 2.0}]}}},
    {"spec": {"analysis": {"traffic": MIRROR, "stages": [{"name": "m"}]}}},
    {"spec": {"guard": {"intervalSeconds": 600, "windowSeconds": 300}}},
    {"spec": {"guard": {"intervalSeconds": 300, "windowSeconds": 300}}},
    *(
        {"spec": {"analysis": {"stages": [{"name": "s", "concurrency": 1, "gates": [gate]}]}}}
        for gate in (
            {"name": "g", "type": "ErrorRate", "itlDefinition": "PerToken"},
            {"name": "g", "type": "TailLatency", "maxErrorRate": 0.1},
            {"name": "g", "type": "Speedup", "minAcceptedLength": 2.0},
            {"name": "g", "type": "Speedup", "minAlpha": 0.5},
            {"name": "g", "type": "ErrorRate", "minDraftTokens": 10},
            {"name": "g", "type": "Acceptance", "minSpeedup": 1.1},
            {"name": "g", "type": "Acceptance", "quantile": 0.9},
            {"name": "g", "type": "Acceptance", "speedupMetric": "Throughput"},
            {"name": "g", "type": "AcceptedLength", "minAcceptedLength": 2.0},
            {"name": "g", "type": "Speedup", "minSpeedup": 1.1, "speedupMetric": "Throughput"},
            {"name": "g", "type": "ErrorRate", "maxErrorRate": 0.1},
        )
    ),
]


def _corpus() -> list[dict[str, Any]]:
    """Whole objects as the API server would hold them (CRD defaults applied)."""
    base = load_example()
    objects = [load_example(path) for path in rollout_examples()]
    for case in TABLE["cases"]:
        for version in VERSIONS:
            patch = {"spec": {"engine": {"vllmVersion": version}, "speculative": None}}
            objects.append(merged(merged(base, patch), {"spec": {"speculative": case["config"]}}))
    objects += [case.obj for case in load_invalid_cases()]
    objects += [merged(base, patch) for patch in BOUNDARY_PATCHES]
    return [apply_defaults(SCHEMA, copy.deepcopy(obj)) for obj in objects]


def _values_at(value: Any, path: str) -> Iterator[Any]:
    """The values at a schema path such as `.spec.analysis.stages[*].gates[*]`."""
    if not path:
        yield value
        return
    if path.startswith("[*]"):
        if isinstance(value, list):
            for item in value:
                yield from _values_at(item, path[3:])
        return
    name, _, rest = path[1:].partition(".")
    rest = "." + rest if rest else ""
    if "[*]" in name:
        name, _, tail = name.partition("[*]")
        rest = "[*]" + tail + rest
    if isinstance(value, dict) and name in value:
        yield from _values_at(value[name], rest)


def _crd_rules() -> list[tuple[str, dict[str, str]]]:
    """The CEL rules written as rules.Rule (the generated minimum rules aside: below)."""
    found: list[tuple[str, dict[str, str]]] = []
    walk(
        SCHEMA,
        lambda path, node: found.extend(
            (path, entry)
            for entry in node.get("x-kubernetes-validations", [])
            if entry != _minimum_rule_of(node)
        ),
    )
    return found


def _minimum_rule_of(node: dict[str, Any]) -> dict[str, str] | None:
    low = node.get("minimum")
    if node.get("type") != "number" or not isinstance(low, float) or low.is_integer():
        return None
    return minimum_rule(low, strict=node.get("exclusiveMinimum") is True)


def _minimum_nodes() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    walk(
        SCHEMA,
        lambda path, node: found.extend(
            [(path, node)]
            if _minimum_rule_of(node) in node.get("x-kubernetes-validations", [])
            else []
        ),
    )
    return found


MINIMUM_NODES = _minimum_nodes()


def test_fractional_minimums_hold_integers_too() -> None:
    """The API server truncates a fractional `minimum` for an integer value (`minAlpha: 0`
    passed `minimum: 0.05` on kube-apiserver 1.34); each such field carries a generated CEL
    rule that compares the double, and it agrees with the bound on both sides of it."""
    assert {path.rsplit(".", 1)[-1] for path, _ in MINIMUM_NODES} >= {
        "minAlpha",
        "minAcceptedLength",
        "minSpeedup",
        "quantile",
        "confidence",
    }
    environment = celpy.Environment()
    for path, node in MINIMUM_NODES:
        low, strict = node["minimum"], node.get("exclusiveMinimum") is True
        rule = _minimum_rule_of(node)
        assert rule is not None
        program = environment.program(environment.compile(rule["rule"]))
        # The API server hands CEL a `number` field as a double, integers included.
        for value in (int(low), low - 0.01, low, low + 0.01, int(low) + 1):
            expected = value > low if strict else value >= low
            assert _cel_holds(program, float(value)) is expected, (path, value)


CORPUS = _corpus()
CRD_RULES = _crd_rules()
WRITTEN_ONCE: dict[str, Rule] = {
    rule.check.cel(): rule
    for rules in (*RULES.values(), ROOT_RULES)
    for rule in rules
    if isinstance(rule, Rule)
}


def _cel_holds(program: Any, obj: Any) -> bool:
    try:
        result = program.evaluate({"self": json_to_cel(obj)})
    except CELEvalError:
        return False
    return not isinstance(result, CELEvalError) and bool(result)


def test_the_crd_carries_every_rule_and_only_those() -> None:
    assert sorted(entry["rule"] for _, entry in CRD_RULES) == sorted(WRITTEN_ONCE)


@pytest.mark.parametrize(
    ("path", "entry"), CRD_RULES, ids=[f"{p or '.'}:{e['message'][:50]}" for p, e in CRD_RULES]
)
def test_python_and_cel_agree(path: str, entry: dict[str, str]) -> None:
    rule = WRITTEN_ONCE.get(entry["rule"])
    assert rule is not None, "hand-written CEL: write it as a rules.Rule"
    assert rule.to_schema() == entry
    objects = [value for obj in CORPUS for value in _values_at(obj, path)]
    environment = celpy.Environment()
    program = environment.program(environment.compile(entry["rule"]))
    verdicts = [(rule.holds(obj), _cel_holds(program, obj)) for obj in objects]
    disagree = [obj for obj, (python, cel) in zip(objects, verdicts, strict=True) if python != cel]
    assert not disagree, disagree[:2]
    assert any(python for python, _ in verdicts), "no object in the corpus passes this rule"
    assert not all(python for python, _ in verdicts), "no object in the corpus breaks it"
