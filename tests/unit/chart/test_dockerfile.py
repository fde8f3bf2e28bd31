"""The operator image's Dockerfile: pinned base, non-root user, runtime dependencies only.

No container builder exists here, so the structure is what can be checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

DOCKERFILE = Path(__file__).resolve().parents[3] / "operator" / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


def test_every_base_image_is_pinned_by_tag() -> None:
    bases = [arg.split()[0] for op, arg in instructions() if op == "FROM"]
    assert bases
    for base in bases:
        _, _, tag = base.partition(":")
        assert tag and tag != "latest", base
        assert re.match(r"^\d+\.\d+\.\d+-slim", tag), f"{base}: pin a full version"


def test_runs_as_a_numeric_non_root_user() -> None:
    users = [arg for op, arg in instructions() if op == "USER"]
    assert users, "no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_installs_no_extras_and_starts_the_operator() -> None:
    runs = " ".join(arg for op, arg in instructions() if op == "RUN")
    assert "pip install ." in runs
    assert not re.search(r"\.\[|\[dev|\[sim|pytest|ruff|mypy", runs)
    assert ("ENTRYPOINT", '["specdecode-operator"]') in instructions()
    copied = [arg for op, arg in instructions() if op == "COPY"]
    assert not any("tests" in arg or "engine-image" in arg for arg in copied)
