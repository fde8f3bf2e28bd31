"""The simulator holds to the contract real vLLM answered (tests/data/vllm-<version>-contract
.json, recorded by tests/e2e/test_engine_contract.py from a live vLLM), on the same requests
(tests/cluster/enginecontract.py); and the comparison sees one renamed metric or label.

Cheap enough for every CI run: one simulator per imitated release, one per control.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import enginecontract as contract
from enginecontract import RunningEngine

pytestmark = pytest.mark.unit

RECORDED = sorted(contract.REPO.glob("tests/data/vllm-*-contract.json"))


def _env(version: str) -> dict[str, str]:
    env = {k: v for k, v in contract.engine_env().items() if not k.startswith("SPECDECODE_SIM_")}
    return env | {
        "PYTHONPATH": str(contract.REPO / "engine-image"),
        "SPECDECODE_VLLM_VERSION": version,
    }


def _observe(version: str, rename: dict[str, str] | None = None) -> dict[str, Any]:
    command = contract.simulator_command(sys.executable, rename)
    with contract.running_engine(command, _env(version), 60.0) as engine:
        return contract.observe(engine.base_url)


def _recorded(path: Path) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads(path.read_text())
    return recorded


def _version(path: Path) -> str:
    return path.name.removeprefix("vllm-").removesuffix("-contract.json")


@pytest.fixture(scope="module")
def sim() -> Iterator[RunningEngine]:
    """The simulator imitating the pinned release (the controls' baseline)."""
    env = _env(contract.PINNED_VERSION)
    with contract.running_engine(contract.simulator_command(sys.executable), env, 60.0) as e:
        yield e


@pytest.mark.parametrize("path", RECORDED, ids=_version)
def test_simulator_answers_as_real_vllm_did(path: Path) -> None:
    expected = {k: v for k, v in _recorded(path).items() if k != "startup_refusals"}
    assert expected["version"]["body"]["version"] == _version(path)
    assert contract.differences(expected, _observe(_version(path))) == []


@pytest.mark.parametrize(
    ("rename", "where"),
    [
        (
            {"vllm:spec_decode_num_drafts": "vllm:spec_decode_num_draft"},
            "metrics.vllm:spec_decode_num_drafts: missing",
        ),
        (
            {"position": "pos"},
            "metrics.vllm:spec_decode_num_accepted_tokens_per_pos.samples",
        ),
    ],
    ids=["metric-name", "label-name"],
)
def test_the_contract_sees_one_renamed_metric_or_label(
    sim: RunningEngine, rename: dict[str, str], where: str
) -> None:
    """The control: the same simulator with one name changed inside prometheus_client."""
    baseline = contract.observe(sim.base_url)
    found = contract.differences(baseline, _observe(contract.PINNED_VERSION, rename))
    assert any(line.startswith(where) for line in found), found


@pytest.mark.parametrize(
    ("path", "name"),
    [(path, name) for path in RECORDED for name in sorted(contract.BAD_SPECULATIVE_CONFIGS)],
    ids=lambda value: value if isinstance(value, str) else _version(value),
)
def test_simulator_refuses_bad_speculative_configs_as_real_vllm_did(path: Path, name: str) -> None:
    config, fragment = contract.BAD_SPECULATIVE_CONFIGS[name]
    real_line = _recorded(path)["startup_refusals"][name]
    assert real_line is not None and fragment in real_line
    command = contract.simulator_command(sys.executable)
    command[command.index("--speculative-config") + 1] = json.dumps(config)
    status, output = contract.refused_start(command, _env(_version(path)), 60.0)
    assert status == 1, output
    assert contract.startup_refusal_line(output, fragment) == real_line, output
