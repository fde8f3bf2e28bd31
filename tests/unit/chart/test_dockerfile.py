"""The operator image's Dockerfile: base pinned by digest, non-root user, locked runtime
dependencies only.

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


def test_every_base_image_is_pinned_by_digest_with_its_full_version_tag() -> None:
    bases = [arg.split()[0] for op, arg in instructions() if op == "FROM"]
    assert bases
    for base in bases:
        name, _, digest = base.partition("@")
        _, _, tag = name.partition(":")
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), f"{base}: pin by digest"
        assert re.match(r"^\d+\.\d+\.\d+-slim", tag), f"{base}: name the full version too"
        assert f"# {name} " in DOCKERFILE.read_text(), f"{base}: the tag in a comment above"


def test_runs_as_a_numeric_non_root_user() -> None:
    users = [arg for op, arg in instructions() if op == "USER"]
    assert users, "no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_installs_the_locked_runtime_and_no_extras_and_starts_the_operator() -> None:
    runs = " ".join(arg for op, arg in instructions() if op == "RUN")
    installs = re.findall(r"pip install ([^&]*)", runs)
    assert installs, "no pip install"
    for install in installs:  # only hash-checked locks, or our own wheel without resolving
        assert "--require-hashes -r requirements/" in install or (
            "--no-deps" in install and install.strip().endswith(".whl")
        ), install
    assert "requirements/runtime.lock" in runs
    assert not re.search(r"\.\[|\[dev|\[sim|pytest|ruff|mypy|dev\.lock", runs)
    assert ("ENTRYPOINT", '["specdecode-operator"]') in instructions()
    copied = [arg for op, arg in instructions() if op == "COPY"]
    assert not any("tests" in arg or "engine-image" in arg for arg in copied)
