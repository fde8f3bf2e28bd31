"""The Argo CD health check and actions, run by the real Lua 5.1 interpreter on fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from argocd_lua import ARGOCD_DIR, lua_literal, run_script

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXPECTATIONS: dict[str, dict[str, str]] = yaml.safe_load(
    (Path(__file__).resolve().parent / "health_expectations.yaml").read_text()
)
HEALTH = ARGOCD_DIR / "health.lua"
ACTIONS = ("promote", "abort", "retry")


def load(name: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((FIXTURES / name).read_text())
    return obj


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.yaml")) == sorted(EXPECTATIONS)


@pytest.mark.parametrize("fixture", sorted(EXPECTATIONS))
def test_health(fixture: str) -> None:
    assert run_script(HEALTH, load(fixture)) == EXPECTATIONS[fixture]


def test_all_four_argo_statuses_are_covered() -> None:
    statuses = {expected["status"] for expected in EXPECTATIONS.values()}
    assert statuses == {"Healthy", "Progressing", "Degraded", "Suspended"}


def test_health_uses_only_lua_5_1() -> None:
    """gopher-lua is 5.1: no goto, no integer division, no bitwise operators, no utf8."""
    source = HEALTH.read_text()
    for construct in ("goto ", "//", "utf8.", "<<", ">>", "&"):
        assert construct not in source, construct


@pytest.mark.parametrize("action", ACTIONS)
def test_action_sets_the_annotation_and_keeps_others(action: str) -> None:
    obj = load("analyzing.yaml")
    obj["metadata"]["annotations"] = {"team": "serving"}
    result = run_script(ARGOCD_DIR / "actions" / action / "action.lua", obj)
    assert result["metadata"]["annotations"] == {"team": "serving", "specdecode.io/action": action}
    assert result["status"]["phase"] == "Analyzing"


@pytest.mark.parametrize("action", ACTIONS)
def test_action_creates_missing_annotations(action: str) -> None:
    result = run_script(ARGOCD_DIR / "actions" / action / "action.lua", load("no-status.yaml"))
    assert result["metadata"]["annotations"] == {"specdecode.io/action": action}


@pytest.mark.parametrize(
    ("fixture", "enabled"),
    [
        ("analyzing.yaml", {"promote", "abort"}),
        ("paused.yaml", {"promote", "abort"}),
        ("rolled-back.yaml", {"retry"}),
        ("failed.yaml", {"retry"}),
        ("promoted-ready.yaml", set()),
        ("no-status.yaml", set()),
    ],
)
def test_discovery_enables_what_the_operator_accepts(fixture: str, enabled: set[str]) -> None:
    result = run_script(ARGOCD_DIR / "actions" / "discovery.lua", load(fixture))
    assert set(result) == set(ACTIONS)
    assert {name for name, action in result.items() if not action["disabled"]} == enabled


def test_lua_literal_escapes_strings() -> None:
    assert (
        lua_literal({"a": ['x"y\\z\n', 1, True, None]})
        == '{["a"] = {"x\\"y\\\\z\\n", 1, true, nil}}'
    )


def test_readme_argocd_snippet_is_the_scripts_verbatim() -> None:
    readme = (ARGOCD_DIR.parent / "README.md").read_text()
    scripts = {
        HEALTH: 4,
        ARGOCD_DIR / "actions" / "discovery.lua": 6,
        **{ARGOCD_DIR / "actions" / action / "action.lua": 10 for action in ACTIONS},
    }
    for script, indent in scripts.items():
        lines = script.read_text().rstrip("\n").split("\n")
        block = "\n".join(" " * indent + line if line else "" for line in lines)
        assert block in readme, f"README's argocd-cm snippet differs from {script.name}"
