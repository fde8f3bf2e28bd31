"""Rendered children of representative rollouts, pinned as YAML snapshots.

A change in what the operator renders shows up as a reviewable diff of these files.
Regenerate after an intended change with `UPDATE_SNAPSHOTS=1 pytest tests/unit/render`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


# Each case rendered by fresh interpreters with different hash seeds: iteration over a set
# or a dict built from one would order labels, args or env differently in each (the
# operator would then patch its children on every restart); within one process it cannot.
FRESH_RENDERER = """
import json
from test_render_snapshots import cases, rendered_yaml
print(json.dumps({case.name: rendered_yaml(case) for case in cases()}))
"""
HASH_SEEDS = ("1", "2")


@pytest.fixture(scope="module")
def rendered_by_fresh_interpreters() -> list[dict[str, str]]:
    pythonpath = os.pathsep.join([str(Path(__file__).parent), *sys.path])
    renderings = []
    for seed in HASH_SEEDS:
        environment = {**os.environ, "PYTHONPATH": pythonpath, "PYTHONHASHSEED": seed}
        child = subprocess.run(
            [sys.executable, "-c", FRESH_RENDERER],
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        renderings.append(json.loads(child.stdout))
    return renderings


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.name)
def test_rendering_does_not_depend_on_the_hash_seed(
    case: RenderCase, rendered_by_fresh_interpreters: list[dict[str, str]]
) -> None:
    here = rendered_yaml(case)
    assert [rendering[case.name] == here for rendering in rendered_by_fresh_interpreters] == [
        True
    ] * len(HASH_SEEDS)
