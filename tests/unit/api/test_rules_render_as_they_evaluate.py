"""Each rule written once (`specdecode.api.rules`) gives the same verdict as Python and as
its rendered CEL (cel-python), rule by rule, over the version table's configs and the
examples: the models and the API server cannot drift apart."""

from __future__ import annotations

from typing import Any, cast

import celpy
import pytest
import yaml
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from localcluster.manifests import REPO as REPO_ROOT
from localcluster.manifests import load_example
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.rollout import SPEC_RULES
from specdecode.api.rules import Rule
from specdecode.api.speculative import RULES as SPECULATIVE_RULES
from specdecode.api.workload import ENGINE_RULES, MODEL_RULES

pytestmark = pytest.mark.unit

TABLE = yaml.safe_load((REPO_ROOT / "tests/data/speculative-versions.yaml").read_text())
BASE = load_example(REPO_ROOT / TABLE["base"])
VERSIONS = ("0.14.1", "0.20.2", "0.33.0")


def _specs() -> list[dict[str, Any]]:
    """Wire-form specs (defaults applied by the models), valid or not."""
    specs = []
    for example in sorted((REPO_ROOT / "examples").rglob("*.yaml")):
        specs.append(SpecDecodeRolloutSpec.model_validate(load_example(example)["spec"]))
    wire: list[dict[str, Any]] = [cast("dict[str, Any]", spec.to_wire()) for spec in specs]
    base = wire[0]
    for case in TABLE["cases"]:
        for version in VERSIONS:
            engine = {**base["engine"], "vllmVersion": version}
            wire.append({**base, "engine": engine, "speculative": case["config"]})
    wire.append({**base, "engine": {**base["engine"], "image": "x/vllm-openai:v0.9.2"}})
    wire.append({**base, "model": {**base["model"], "extraArgs": ["--port=1", "--seed"]}})
    return wire


SPECS = _specs()
RULE_TARGETS: list[tuple[str, Rule, str | None]] = [
    *((f"speculative:{r.message}", r, "speculative") for r in SPECULATIVE_RULES.rules),
    *((f"spec:{r.message}", r, None) for r in SPEC_RULES.rules),
    *((f"engine:{r.message}", r, "engine") for r in ENGINE_RULES.rules),
    *((f"model:{r.message}", r, "model") for r in MODEL_RULES.rules),
]


def _cel_holds(program: Any, obj: dict[str, Any]) -> bool:
    try:
        result = program.evaluate({"self": json_to_cel(obj)})
    except CELEvalError:
        return False
    return not isinstance(result, CELEvalError) and bool(result)


@pytest.mark.parametrize(
    ("name", "rule", "node"), RULE_TARGETS, ids=[t[0][:60] for t in RULE_TARGETS]
)
def test_python_and_cel_agree(name: str, rule: Rule, node: str | None) -> None:
    candidates = [spec if node is None else spec.get(node) for spec in SPECS]
    objects: list[dict[str, Any]] = [obj for obj in candidates if isinstance(obj, dict)]
    environment = celpy.Environment()
    program = environment.program(environment.compile(rule.check.cel()))
    verdicts = [(rule.holds(obj), _cel_holds(program, obj)) for obj in objects]
    assert all(python == cel for python, cel in verdicts)
    assert any(python for python, _ in verdicts)  # never a rule that refuses everything
