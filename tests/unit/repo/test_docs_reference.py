"""docs/reference.md, the resource reference of the documentation site, is generated from the
pydantic models, and docs/gates.md's gate table from the certification kernel
(`python -m specdecode.tools.docgen --write`, run by `make crds`): a model or kernel change
committed without regenerating the pages fails here, as a CRD left behind fails
`make verify-crds`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from specdecode.tools import docgen

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def test_the_committed_reference_page_is_what_the_models_generate() -> None:
    diff = docgen.stale(REPO)
    assert not diff, "docs/reference.md is stale: run `make crds` and commit it\n" + diff


def test_a_stale_description_is_found(tmp_path: Path) -> None:
    """The check can fail: one description edited in a copy of the page is reported."""
    (tmp_path / "docs").mkdir()
    page = tmp_path / docgen.PAGE
    shutil.copy(REPO / docgen.PAGE, page)
    shutil.copy(REPO / "docs" / "gates.md", tmp_path / "docs" / "gates.md")
    text = page.read_text()
    old = "| Model to serve: a hub id or a local path. |"
    assert old in text
    page.write_text(text.replace(old, "| Model to serve. |"))
    diff = docgen.stale(tmp_path)
    assert "-| `spec.model.name` |" in diff and "+| `spec.model.name` |" in diff


def test_every_field_of_both_resources_has_a_row() -> None:
    """Rows for the nested fields the walk must reach: list items, maps, status."""
    page = docgen.render_page()
    for path in (
        "spec.analysis.stages[].gates[].type",
        "spec.speculative.method",
        "spec.workloadRef.name",
        "status.stages[].gates[].looks",
        "spec.searchSpace",
    ):
        assert f"| `{path}` |" in page, path


def test_a_stale_gate_table_is_found(tmp_path: Path) -> None:
    """docs/gates.md's table is the kernel's: a row edited by hand is reported."""
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / docgen.PAGE, tmp_path / docgen.PAGE)
    page = tmp_path / "docs" / "gates.md"
    text = (REPO / "docs" / "gates.md").read_text()
    old = "| Speedup | Mirror, mirrorPairing ServerSide |"
    assert old in text
    page.write_text(text.replace(old, "| Speedup | Mirror (judged) |"))
    diff = docgen.stale(tmp_path)
    assert "-| Speedup | Mirror (judged) |" in diff and f"+{old}" in diff
