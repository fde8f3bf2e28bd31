"""The domain imports nothing of the wire schema (issue 35: the domain imports no api).

import-linter forbids `specdecode.domain -> specdecode.api`; its contract could still let
imports through, listed one a line in `ignore_imports`. Every module is converted, so the
list is empty: this test refuses a line added back, and keeps the shape check (a wildcard
would let any number of imports through under one line) should one ever be argued for.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
CONTRACT = "The domain imports no api (the wire schema)"

# The imports left to convert: none. Never raise it.
MAX_DOMAIN_WIRE_IMPORTS = 0

# One module of the domain, one module of the api (not the package, whose __init__
# re-exports every name): no wildcard.
ONE_IMPORT = re.compile(r"^specdecode\.domain(\.\w+)+ -> specdecode\.api(\.\w+)+$")


def ignored_imports() -> list[str]:
    """The contract's `ignore_imports`, as pyproject.toml spells them."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [contract for contract in contracts if contract["name"] == CONTRACT]
    assert contract["source_modules"] == ["specdecode.domain"]
    assert contract["forbidden_modules"] == ["specdecode.api"]
    imports: list[str] = contract.get("ignore_imports", [])
    return imports


def test_the_list_of_domain_imports_of_the_api_is_empty() -> None:
    assert len(ignored_imports()) <= MAX_DOMAIN_WIRE_IMPORTS
    assert ignored_imports() == []


def test_each_line_names_one_import() -> None:
    imports = ignored_imports()
    assert [line for line in imports if not ONE_IMPORT.match(line)] == []
    assert len(set(imports)) == len(imports)


def test_unmatched_lines_are_errors() -> None:
    """The list cannot go stale: import-linter's default refuses a line matching nothing."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"] == CONTRACT]
    assert contract.get("unmatched_ignore_imports_alerting", "error") == "error"


# Parts of the domain converted: no line of the list may name them again.
CONVERTED = (
    "specdecode.domain.tuning",
    "specdecode.domain.load_sizing",
    "specdecode.domain.engine_version",
    "specdecode.domain.engine_metrics",
    "specdecode.domain.mirror_wanted",
    "specdecode.domain.guarding",
    "specdecode.domain.guard_findings",
    "specdecode.domain.latency_drift",
    "specdecode.domain.guard_model",
    "specdecode.domain.prompt_set",
    "specdecode.domain.concurrency_verdict",
    "specdecode.domain.analysis_plan",
    "specdecode.domain.acceptance_split",
    "specdecode.domain.load_status",
    "specdecode.domain.actions",
    "specdecode.domain.apply_findings",
    "specdecode.domain.cadence",
    "specdecode.domain.conditions",
    "specdecode.domain.degraded",
    "specdecode.domain.display",
    "specdecode.domain.effects",
    "specdecode.domain.evidence",
    "specdecode.domain.invalid",
    "specdecode.domain.stage_state",
    "specdecode.domain.rollout_state",
    "specdecode.domain.decision",
    "specdecode.domain.source",
    "specdecode.domain.speculative_setting",
    "specdecode.domain.adoption",
    "specdecode.domain.analyzing",
    "specdecode.domain.gate_boundary",
    "specdecode.domain.machine",
    "specdecode.domain.pass_decision",
    "specdecode.domain.phases",
    "specdecode.domain.source_spec",
    "specdecode.domain.stages",
    "specdecode.domain.transitions",
    "specdecode.domain.certification",
    "specdecode.domain.rollout_settings",
)


def test_a_converted_part_of_the_domain_stays_converted() -> None:
    assert [line for line in ignored_imports() if line.startswith(CONVERTED)] == []


def test_no_domain_module_passes_on_a_wire_name() -> None:
    """A name of the api imported from another domain module is an import of the api the
    contract cannot see (it follows modules, not names): `from specdecode.domain.x import
    SpecDecodeRolloutSpec` would launder it past the list."""
    laundered = []
    for path in sorted((REPO / "operator" / "specdecode" / "domain").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if not node.module.startswith("specdecode.domain"):
                continue
            source = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(source, alias.name, None)
                if getattr(value, "__module__", "").startswith("specdecode.api"):
                    laundered.append(f"{path.name}: {node.module}.{alias.name}")
    assert laundered == []


def test_importing_the_whole_domain_loads_no_api_module() -> None:
    """What the contract and the name check cannot see (an `import x as m` then `m.Name`, a
    lazy import in a function body, an import hidden from the linter): in a fresh
    interpreter, importing every domain module loads nothing from `specdecode.api`."""
    script = (
        "import pkgutil, sys, importlib, specdecode.domain as d\n"
        "for m in pkgutil.walk_packages(d.__path__, 'specdecode.domain.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n.startswith('specdecode.api')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "operator")}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout
