"""Every module of the operator and the load pods falls under an import-linter contract.

A module no contract names is checked by none: it may import any layer, and any layer may
import it, and `lint-imports` still says every contract is kept. Naming a package covers
its submodules; the root packages themselves (their `__init__`) hold only a docstring.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
ROOTS = ("specdecode", "specdecode_load")


def contracted_modules() -> set[str]:
    """Every module a contract names: its layers (siblings split) and its source modules."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    named: set[str] = set()
    for contract in config["tool"]["importlinter"]["contracts"]:
        for layer in contract.get("layers", []):
            named.update(part.strip() for part in layer.replace(":", "|").split("|"))
        named.update(contract.get("source_modules", []))
    return named


def package_modules() -> list[str]:
    """The dotted names of every module under the root packages, but the roots themselves."""
    modules = []
    for root in ROOTS:
        for path in sorted((REPO / "operator" / root).rglob("*.py")):
            parts = path.relative_to(REPO / "operator").with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if len(parts) > 1 or root == "specdecode_load":
                modules.append(".".join(parts))
    return modules


def test_every_module_is_under_a_contract() -> None:
    named, modules = contracted_modules(), package_modules()
    assert "specdecode.domain.stats" in modules  # the walk found the tree
    uncovered = [
        module
        for module in modules
        if not any(module == name or module.startswith(f"{name}.") for name in named)
    ]
    assert uncovered == []
