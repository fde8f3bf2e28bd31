"""One contract, two engines: the simulator and real vLLM (PyPI's CPU build, the lane's tiny
models) answer the same requests with the same shapes (tests/cluster/enginecontract.py).

Both run as local processes on loopback, each started once for the module. The real
engine's observation must equal the checked-in one (tests/data/vllm-<version>-contract.json,
which the unit tests hold the simulator to); `SPECDECODE_CONTRACT_RECORD=1` rewrites that file
from the live engine instead. The simulator imitates the real engine's release
(SPECDECODE_VLLM_VERSION) so /version compares too. No cluster: the real server holds ~4 GiB,
so run this under the machine lock like any e2e test.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import enginecontract as contract
from enginecontract import RunningEngine
from localcluster import realvllm

# Real vLLM takes both cores: `make test` runs this alone (cpu_exclusive).
pytestmark = [pytest.mark.e2e, pytest.mark.cpu_exclusive]

LANE = contract.REPO / "tests/cluster/realvllm"
REAL_READY_S = 420.0  # ~25 s on an idle machine; `import vllm` alone took 50 s on a busy one
RECORD = os.environ.get("SPECDECODE_CONTRACT_RECORD") == "1"


@pytest.fixture(scope="module")
def vllm_python() -> Path:
    """The real-vLLM lane's interpreter (installed once, cached outside the repo)."""
    return realvllm.install() / "bin/python"


@pytest.fixture(scope="module")
def target_model(vllm_python: Path) -> Path:
    """The lane's tiny target model (made once without a hub, cached)."""
    return realvllm.make_models(vllm_python.parent.parent) / "target"


def _real_env(tmp: Path) -> dict[str, str]:
    return contract.engine_env(
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_HOST_IP="127.0.0.1",
        VLLM_NO_USAGE_STATS="1",
        VLLM_CACHE_ROOT=str(tmp / "vllm-cache"),
        HF_HOME=str(tmp / "hf"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )


def _real_command(python: Path, model: Path, config: dict[str, Any] | None = None) -> list[str]:
    return [str(python), str(LANE / "vllm_launcher.py"), "serve", str(model),
            *contract.serve_flags(config), "--max-num-seqs", "16", "--dtype", "bfloat16",
            "--enforce-eager"]  # fmt: skip


@pytest.fixture(scope="module")
def real(
    vllm_python: Path, target_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningEngine]:
    env = _real_env(tmp_path_factory.mktemp("real-vllm"))
    with contract.running_engine(
        _real_command(vllm_python, target_model), env, REAL_READY_S
    ) as engine:
        yield engine


@pytest.fixture(scope="module")
def real_observed(real: RunningEngine) -> dict[str, Any]:
    return contract.observe(real.base_url)


@pytest.fixture(scope="module")
def real_version(real: RunningEngine, real_observed: dict[str, Any]) -> str:
    version: str = real_observed["version"]["body"]["version"]
    return version


@pytest.fixture(scope="module")
def sim(real_version: str) -> Iterator[RunningEngine]:
    env = contract.engine_env(
        PYTHONPATH=str(contract.REPO / "engine-image"), SPECDECODE_VLLM_VERSION=real_version
    )
    with contract.running_engine(contract.simulator_command(sys.executable), env, 60.0) as engine:
        yield engine


@pytest.fixture(scope="module")
def real_refusals(vllm_python: Path, target_model: Path) -> dict[str, str | None]:
    """Real vLLM's error line for each bad speculative config (one refused start each)."""
    lines: dict[str, str | None] = {}
    env = _real_env(Path(os.environ.get("TMPDIR", "/tmp")))
    for name, (config, fragment) in contract.BAD_SPECULATIVE_CONFIGS.items():
        command = _real_command(vllm_python, target_model, config)
        status, output = contract.refused_start(command, env, REAL_READY_S)
        assert status != 0, output[-2000:]
        lines[name] = contract.startup_refusal_line(output, fragment)
    return lines


@pytest.fixture(scope="module")
def recorded(
    real_observed: dict[str, Any], real_version: str, real_refusals: dict[str, str | None]
) -> dict[str, Any]:
    """The checked-in contract (rewritten from the live engine with RECORD)."""
    path = contract.contract_path(real_version)
    if RECORD:
        observed = real_observed | {"startup_refusals": real_refusals}
        path.write_text(json.dumps(observed, indent=1, sort_keys=True) + "\n")
    answer: dict[str, Any] = json.loads(path.read_text())
    return answer


def test_real_vllm_keeps_the_recorded_contract(
    real_observed: dict[str, Any], recorded: dict[str, Any]
) -> None:
    expected = {key: value for key, value in recorded.items() if key != "startup_refusals"}
    assert contract.differences(expected, real_observed) == []


def test_real_vllm_refuses_bad_speculative_configs_as_recorded(
    real_refusals: dict[str, str | None], recorded: dict[str, Any]
) -> None:
    """What the simulator's refusals are held to (unit: test_sim_keeps_real_contract.py)."""
    assert real_refusals == recorded["startup_refusals"]
    assert all(line is not None for line in real_refusals.values()), real_refusals


def test_simulator_answers_as_real_vllm_does(
    real_observed: dict[str, Any], sim: RunningEngine
) -> None:
    """Identical requests, live, to both engines."""
    assert contract.differences(real_observed, contract.observe(sim.base_url)) == []
