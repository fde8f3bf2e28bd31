"""Every row of tests/data/speculative-versions.yaml through the simulator's start-up
validation, for every supported release: the verdict (accept / ignore / refuse) and
vLLM's message where the table has one."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from simtesting import REPO

from specdecode_sim.cli import main
from specdecode_sim.releases import Release, every_supported_release
from specdecode_sim.specconfig import (
    SpeculativeConfigError,
    TargetModel,
    build_speculative_config,
)

pytestmark = pytest.mark.unit

TABLE = yaml.safe_load((REPO / "tests/data/speculative-versions.yaml").read_text())
LLAMA_8B_TARGET = TargetModel("meta-llama/Llama-3.1-8B-Instruct", "llama", 1, 8192)
RELEASES = every_supported_release()


def _expected(case: dict[str, Any], minor: int) -> dict[str, Any]:
    for row in case["vllm"]:
        first, last = (int(part) for part in row["span"].split("-"))
        if first <= minor <= last:
            return dict(row)
    raise AssertionError(f"{case['name']}: no vllm span covers 0.{minor}")


def _verdict(config: dict[str, Any], release: Release) -> tuple[str, str]:
    try:
        built = build_speculative_config(config, LLAMA_8B_TARGET, release)
    except SpeculativeConfigError as error:
        return "refuse", error.rendered
    assert built is not None
    return ("ignore" if built.ignored_keys else "accept"), ""


@pytest.mark.parametrize("case", TABLE["cases"], ids=lambda case: case["name"])
def test_simulator_reproduces_vllm_verdicts(case: dict[str, Any]) -> None:
    wrong = []
    for release in RELEASES:
        expected = _expected(case, release.minor)
        verdict, message = _verdict(case["config"], release)
        if verdict != expected["verdict"] or expected.get("message", "") not in message:
            wrong.append((release.version, expected, verdict, message))
    assert not wrong, wrong


def test_the_table_covers_refusals_and_silent_drops() -> None:
    """The comparison above can fail both ways: rows expect every verdict somewhere."""
    seen = {row["verdict"] for case in TABLE["cases"] for row in case["vllm"]}
    assert seen == {"accept", "ignore", "refuse"}


@pytest.mark.parametrize("release", RELEASES, ids=lambda release: release.version)
def test_eagle3_on_a_mistral_target_exits_at_start(
    release: Release, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the e2e test of a crash-looping candidate relies on, in every release."""
    monkeypatch.setenv("SPECDECODE_VLLM_VERSION", release.version)
    config = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
              "num_speculative_tokens": 3}  # fmt: skip
    argv = ["serve", "mistralai/Mistral-7B-Instruct-v0.3", "--speculative-config"]
    assert main([*argv, json.dumps(config)]) == 1
    assert "Eagle3 is only supported for" in capsys.readouterr().err
