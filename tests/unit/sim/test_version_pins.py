"""The real engine image, its version file, the simulator image's label and the operator's
pinned release agree; the simulator imitates a release the operator supports."""

from __future__ import annotations

import re

import pytest
from simtesting import REPO

from specdecode.api.vllm_versions import PINNED_VLLM_VERSION, is_supported
from specdecode_sim.version import IMITATED_VLLM_VERSION

pytestmark = pytest.mark.unit

ENGINE = REPO / "engine-image"


def test_version_file_dockerfile_and_simulator_agree() -> None:
    pinned = (ENGINE / "VLLM_VERSION").read_text().strip()
    from_lines = re.findall(r"^FROM\s+(\S+)", (ENGINE / "Dockerfile").read_text(), re.M)
    assert [line.split("@")[0] for line in from_lines] == [f"vllm/vllm-openai:v{pinned}"]
    # Pinned by digest where the digest is known (v0.33.0's is still to be added, see the
    # Dockerfile); a digest, when present, is a full sha256.
    digests = [line.split("@", 1)[1] for line in from_lines if "@" in line]
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", digest) for digest in digests), digests
    assert pinned == PINNED_VLLM_VERSION
    # The simulator is being taught every supported release (it will answer /version with
    # the release the operator selected); until then it must imitate a supported one.
    assert is_supported(IMITATED_VLLM_VERSION)
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
