"""The real engine image, its version file, the simulator image's label and the operator's
pinned release agree; the simulator's copy of the release facts matches the operator's
(operator/specdecode/api/vllm_versions.py, loaded by file path: importing it as
`specdecode.api.vllm_versions` would run the pydantic models of `specdecode/api`)."""

from __future__ import annotations

import importlib.util
import re
import sys
from types import ModuleType

import pytest
from simtesting import REPO

from specdecode_sim import releases

pytestmark = pytest.mark.unit

ENGINE = REPO / "engine-image"


def _operator_facts() -> ModuleType:
    path = REPO / "operator/specdecode/api/vllm_versions.py"
    spec = importlib.util.spec_from_file_location("operator_vllm_versions", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while decorating
    spec.loader.exec_module(module)
    return module


FACTS = _operator_facts()


def _span(span: object) -> tuple[int, int]:
    return (span.first, span.last)  # type: ignore[attr-defined]


def test_simulator_release_table_matches_the_operators() -> None:
    assert releases.PINNED_VLLM_VERSION == FACTS.PINNED_VLLM_VERSION
    assert releases.OLDEST_SUPPORTED == FACTS.OLDEST_SUPPORTED
    assert releases.NEWEST_MINOR == FACTS.NEWEST_MINOR
    assert releases.SUPPORTED_RANGE_TEXT == FACTS.SUPPORTED_RANGE_TEXT
    assert {m: _span(s) for m, s in releases.METHODS.items()} == {
        m: _span(f.span) for m, f in FACTS.METHODS.items()
    } | {"draft_model": (11, 33)}  # in the Literal from 0.11; runs from 0.15 (below)
    assert _span(releases.DRAFT_MODEL_RUNS) == _span(FACTS.METHODS["draft_model"].span)
    assert releases.NEVER_STARTS == FACTS.NEVER_STARTS
    assert {f: _span(s) for f, s in releases.FIELDS.items()} == {
        f: _span(s) for f, s in FACTS.FIELDS.items()
    }
    simulator_values = {
        field: {value: _span(span) for value, span in values.items()}
        for field, values in releases.FIELD_VALUES.items()
    }
    simulator_values["rejection_sample_method"]["synthetic"] = (20, 33)  # 0.19: docstring
    assert simulator_values == {
        field: {value: _span(span) for value, span in values.items()}
        for field, values in FACTS.FIELD_VALUES.items()
    }
    assert _span(releases.UNKNOWN_KEYS_REJECTED) == _span(FACTS.UNKNOWN_KEYS_REJECTED)
    assert _span(releases.TIME_PER_OUTPUT_TOKEN_METRIC) == _span(
        FACTS.METRICS["time_per_output_token"].span
    )
    assert {r: _span(s) for r, s in releases.FINISH_REASONS.items()} == {
        r: _span(s) for r, s in FACTS.FINISH_REASONS.items()
    }


@pytest.mark.parametrize("version", ["0.11.2", "0.15.1", "0.33.0", "0.33.7"])
def test_every_supported_release_is_accepted(version: str) -> None:
    assert FACTS.is_supported(version)
    assert releases.parse_release(version).version == version


@pytest.mark.parametrize("version", ["0.11.1", "0.10.2", "0.34.0", "1.0.0", "0.33", "latest"])
def test_unsupported_releases_are_refused_like_the_operator(version: str) -> None:
    assert not FACTS.is_supported(version)
    with pytest.raises(releases.ReleaseError, match=r"0\.11\.2 to 0\.33\.x"):
        releases.parse_release(version)


def test_version_file_dockerfile_and_simulator_agree() -> None:
    pinned = (ENGINE / "VLLM_VERSION").read_text().strip()
    from_lines = re.findall(r"^FROM\s+(\S+)", (ENGINE / "Dockerfile").read_text(), re.M)
    assert [line.split("@")[0] for line in from_lines] == [f"vllm/vllm-openai:v{pinned}"]
    # Pinned by digest where the digest is known (v0.33.0's is still to be added, see the
    # Dockerfile); a digest, when present, is a full sha256.
    digests = [line.split("@", 1)[1] for line in from_lines if "@" in line]
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", digest) for digest in digests), digests
    assert pinned == FACTS.PINNED_VLLM_VERSION == releases.PINNED_VLLM_VERSION
    # Without SPECDECODE_VLLM_VERSION the simulator imitates the pinned release.
    assert releases.release_from_env({}).version == pinned
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


def test_an_image_knob_makes_the_engine_another_release_than_declared() -> None:
    """The stand-in for an image whose tag and contents disagree: the engine is what the
    image says, not what the operator declared (so the operator's /version check can fire)."""
    environ = {"SPECDECODE_VLLM_VERSION": "0.33.0", "SPECDECODE_SIM_IMAGE_VLLM_VERSION": "0.32.0"}
    assert releases.release_from_env(environ).version == "0.32.0"
    assert releases.release_from_env({"SPECDECODE_VLLM_VERSION": "0.30.0"}).version == "0.30.0"
