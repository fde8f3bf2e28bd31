"""Rendered children of representative rollouts, pinned as YAML snapshots.

A change in what the operator renders shows up as a reviewable diff of these files.
Regenerate after an intended change with `UPDATE_SNAPSHOTS=1 pytest tests/unit/render`.
"""

from __future__ import annotations

import os

import pytest
import yaml
from render_cases import UID, RenderCase, cases

from specdecode.adapters.render import render_children

pytestmark = pytest.mark.unit

HEADER = "# Snapshot of render_children(); regenerate with UPDATE_SNAPSHOTS=1 (see the test).\n"


def rendered_yaml(case: RenderCase) -> str:
    objects = render_children(case.rollout_name, "default", UID, case.spec, case.desired)
    return HEADER + yaml.safe_dump_all(objects, sort_keys=False, width=100)


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.name)
def test_rendering_matches_snapshot(case: RenderCase) -> None:
    text = rendered_yaml(case)
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        case.snapshot_path.parent.mkdir(parents=True, exist_ok=True)
        case.snapshot_path.write_text(text)
    assert case.snapshot_path.exists(), "no snapshot yet: run with UPDATE_SNAPSHOTS=1"
    assert text == case.snapshot_path.read_text()


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.name)
def test_rendering_is_deterministic(case: RenderCase) -> None:
    assert rendered_yaml(case) == rendered_yaml(case)
