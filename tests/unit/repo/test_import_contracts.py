"""Every module of the operator and the load pods sits in a layer of an import-linter contract.

A module no contract names is checked by none: it may import any layer, and any layer may
import it, and `lint-imports` still says every contract is kept. A forbidden contract's
source is not enough: it limits what the module imports, not who imports it, so every
module must be in some layers contract. Naming a package covers its submodules; the root
packages themselves (their `__init__`) hold only a docstring. A name a contract lists
must exist, or the contract guards nothing under it.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
ROOTS = ("specdecode", "specdecode_load")


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def layered_modules() -> set[str]:
    """Every module a layers contract names (independent or not, siblings split)."""
    named: set[str] = set()
    for contract in _contracts():
        for layer in contract.get("layers", []):
            named.update(part.strip() for part in layer.replace(":", "|").split("|"))
    return named


def contracted_modules() -> set[str]:
    """Every module of ours a contract names: its layers and its source modules."""
    named = layered_modules()
    for contract in _contracts():
        named.update(contract.get("source_modules", []))
    return {name for name in named if name.split(".")[0] in ROOTS}


def package_modules() -> list[str]:
    """The dotted names of every module under the root packages, but the roots themselves."""
    modules = []
    for root in ROOTS:
        for path in sorted((REPO / "operator" / root).rglob("*.py")):
            parts = path.relative_to(REPO / "operator").with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if len(parts) > 1:
                modules.append(".".join(parts))
    return modules


def test_every_module_is_in_a_layer() -> None:
    layered, modules = layered_modules(), package_modules()
    assert "specdecode.domain.stats" in modules  # the walk found the tree
    uncovered = [
        module
        for module in modules
        if not any(module == name or module.startswith(f"{name}.") for name in layered)
    ]
    assert uncovered == []


def test_every_name_a_contract_lists_exists() -> None:
    modules = {*package_modules(), *ROOTS}
    assert sorted(contracted_modules() - modules) == []


@pytest.mark.parametrize("root", ROOTS)
def test_the_roots_hold_only_a_docstring(root: str) -> None:
    """What no layer names must hold nothing a layer could depend on."""
    tree = ast.parse((REPO / "operator" / root / "__init__.py").read_text())
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)
