"""Load tests/data/invalid-rollouts.yaml: invalid SpecDecodeRollouts as base + merge patch.

Also usable from the e2e test (import it by path, or copy the 30 lines): the table is data,
this module only turns each case into the full object to submit.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
TABLE_PATH = REPO_ROOT / "tests" / "data" / "invalid-rollouts.yaml"


@dataclass(frozen=True)
class InvalidCase:
    """One invalid resource and what must be said about it."""

    name: str
    obj: dict[str, Any]
    field: str
    message: str
    rejected_by: str  # "apiserver" or "operator"
    server_message: str | None


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def load_cases(table_path: Path = TABLE_PATH) -> list[InvalidCase]:
    """Every case of the table, patched onto its base object."""
    table = yaml.safe_load(table_path.read_text())
    base = yaml.safe_load((REPO_ROOT / table["base"]).read_text())
    return [
        InvalidCase(
            name=case["name"],
            obj=merge_patch(base, case["patch"]),
            field=case["field"],
            message=case["message"],
            rejected_by=case["rejected_by"],
            server_message=case.get("server_message"),
        )
        for case in table["cases"]
    ]
