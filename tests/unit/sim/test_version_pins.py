"""The simulator imitates exactly the vLLM release the real engine image pins."""

from __future__ import annotations

import re

import pytest
from simtesting import REPO

from specdecode_sim.version import IMITATED_VLLM_VERSION

pytestmark = pytest.mark.unit

ENGINE = REPO / "engine-image"


def test_version_file_dockerfile_and_simulator_agree() -> None:
    pinned = (ENGINE / "VLLM_VERSION").read_text().strip()
    from_lines = re.findall(r"^FROM\s+(\S+)", (ENGINE / "Dockerfile").read_text(), re.M)
    assert [line.split("@")[0] for line in from_lines] == [f"vllm/vllm-openai:v{pinned}"]
    assert all(re.search(r"@sha256:[0-9a-f]{64}$", line) for line in from_lines), from_lines
    assert pinned == IMITATED_VLLM_VERSION
    assert f'io.specdecode.vllm-version="{pinned}"' in (ENGINE / "Dockerfile.sim").read_text()


def test_real_image_changes_nothing_but_labels() -> None:
    instructions = [
        line.split()[0]
        for line in (ENGINE / "Dockerfile").read_text().splitlines()
        if line.strip() and not line.startswith(("#", " "))
    ]
    assert set(instructions) <= {"FROM", "LABEL"}


def test_sim_image_is_pinned_and_non_root() -> None:
    text = (ENGINE / "Dockerfile.sim").read_text()
    base = re.findall(r"^FROM\s+(\S+)", text, re.M)
    digest = r"@sha256:[0-9a-f]{64}"
    assert len(base) == 1 and re.fullmatch(rf"python:\d+\.\d+\.\d+-slim-\w+{digest}", base[0])
    assert "--require-hashes -r /tmp/sim-image.lock" in text
    assert re.search(r"^USER\s+10001$", text, re.M)
    assert "/usr/local/bin/vllm" in text
    assert re.search(r'^ENTRYPOINT \["vllm", "serve"\]$', text, re.M)  # as vllm/vllm-openai
