"""tools/verify_version.py: the package, chart and image versions agree, and a drift in any
one of them is named (on copies of the real files, so the check itself can be seen to fail).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
FILES = [
    "pyproject.toml",
    "charts/specdecode-operator/Chart.yaml",
    "operator/Dockerfile",
    "engine-image/Dockerfile.sim",
]


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "verify_version", REPO / "tools" / "verify_version.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tool_on_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    for relative in FILES:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / relative, tmp_path / relative)
    tool = load_tool()
    monkeypatch.setattr(tool, "REPO", tmp_path)
    monkeypatch.setattr(tool, "PYPROJECT", tmp_path / FILES[0])
    monkeypatch.setattr(tool, "CHART", tmp_path / FILES[1])
    monkeypatch.setattr(tool, "IMAGES", [tmp_path / FILES[2], tmp_path / FILES[3]])
    return tool


def test_the_repository_agrees_with_itself() -> None:
    tool = load_tool()
    assert tool.disagreements(tool.package_version()) == []


@pytest.mark.parametrize(
    ("relative", "old", "new", "named"),
    [
        (FILES[1], 'appVersion: "0.1.0"', 'appVersion: "0.1.1"', "appVersion"),
        (FILES[1], "\nversion: 0.1.0", "\nversion: 0.2.0", "Chart.yaml: version"),
        (FILES[2], 'image.version="0.1.0"', 'image.version="0.0.9"', "operator/Dockerfile"),
        (FILES[3], 'image.version="0.1.0"', 'image.version="0.0.9"', "Dockerfile.sim"),
        (FILES[0], 'version = "0.1.0"', 'version = "0.1.1"', "Chart.yaml"),
    ],
)
def test_a_drift_in_any_place_is_named(
    tool_on_copies: ModuleType, relative: str, old: str, new: str, named: str
) -> None:
    path = tool_on_copies.REPO / relative
    text = path.read_text()
    assert old in text, f"the fixture no longer matches {relative}"
    path.write_text(text.replace(old, new, 1))
    problems = tool_on_copies.disagreements(tool_on_copies.package_version())
    assert any(named in problem for problem in problems), problems
    assert tool_on_copies.main([]) == 1


def test_set_bumps_every_place(tool_on_copies: ModuleType) -> None:
    assert tool_on_copies.main(["--set", "0.2.0"]) == 0
    assert tool_on_copies.package_version() == "0.2.0"
    assert tool_on_copies.disagreements("0.2.0") == []
