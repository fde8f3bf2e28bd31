"""`$(VAR)` expansion follows Kubernetes semantics."""

from __future__ import annotations

import pytest

from localcluster.agent.expansion import expand, expand_all

pytestmark = pytest.mark.unit

VARS = {"A": "alpha", "B": "beta", "EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)", "alpha"),
        ("x-$(A)-$(B)-y", "x-alpha-beta-y"),
        ("$(EMPTY)z", "z"),
        ("$(UNKNOWN)", "$(UNKNOWN)"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$alpha"),
        ("$$", "$"),
        ("cost: $5", "cost: $5"),
        ("trailing $", "trailing $"),
        ("$(A", "$(A"),
        ("$(", "$("),
        ("no refs", "no refs"),
        ("$()", "$()"),
    ],
)
def test_expand(text: str, expected: str) -> None:
    assert expand(text, VARS) == expected


def test_expand_all_keeps_order() -> None:
    assert expand_all(["--a=$(A)", "$(B)"], VARS) == ["--a=alpha", "beta"]
