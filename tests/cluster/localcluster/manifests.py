"""Manifests as data: the example rollouts, merge patches over them, the invalid-input table.

Pure (YAML in, dicts out), so the unit tests, the e2e tests and the demo build their
resources the same way: an example from `examples/` plus an RFC 7386 merge patch.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
SIMULATOR_EXAMPLE = REPO / "examples" / "simulator" / "specdecode-rollout.yaml"
INVALID_TABLE = REPO / "tests" / "data" / "invalid-rollouts.yaml"


def rollout_examples() -> list[Path]:
    """Every example file that holds a SpecDecodeRollout (tunings live beside them)."""
    return sorted(
        path
        for path in (REPO / "examples").rglob("*.yaml")
        if any(
            document and document.get("kind") == "SpecDecodeRollout"
            for document in yaml.safe_load_all(path.read_text())
        )
    )


def load_example(path: Path = SIMULATOR_EXAMPLE) -> dict[str, Any]:
    """The first SpecDecodeRollout document of an example file."""
    for document in yaml.safe_load_all(path.read_text()):
        if document and document.get("kind") == "SpecDecodeRollout":
            return dict(document)
    raise ValueError(f"no SpecDecodeRollout in {path}")


def merged(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge, None deletes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merged(result.get(key), value)
    return result


@dataclass(frozen=True)
class InvalidCase:
    """One invalid resource and what must be said about it."""

    name: str
    obj: dict[str, Any]
    field: str
    message: str
    rejected_by: str  # "apiserver" or "operator"
    server_message: str | None


def load_invalid_cases(table_path: Path = INVALID_TABLE) -> list[InvalidCase]:
    """Every case of tests/data/invalid-rollouts.yaml, patched onto its base object."""
    table = yaml.safe_load(table_path.read_text())
    base = yaml.safe_load((REPO / table["base"]).read_text())
    return [
        InvalidCase(
            name=case["name"],
            obj=merged(base, case["patch"]),
            field=case["field"],
            message=case["message"],
            rejected_by=case["rejected_by"],
            server_message=case.get("server_message"),
        )
        for case in table["cases"]
    ]
