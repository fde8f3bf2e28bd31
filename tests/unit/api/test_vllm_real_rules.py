"""The operator's rules for a vLLM release against that release's own code.

tests/data/vllm-<version>-speculative-configs.yaml is what the installed vLLM's
`SpeculativeConfig` did with every config of tests/data/speculative-versions.yaml (written by
tests/cluster/realvllm/check_speculative_configs.py in the real-vLLM virtualenv, which this
venv cannot import). Here: the table's vLLM column says what vLLM really did; the operator
admits a config only where vLLM accepts it, and where it refuses one vLLM would run the
fixture says why; the methods, fields and values the operator knows for that release are the
release's own.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from localcluster.manifests import REPO as REPO_ROOT
from specdecode.api import SpecDecodeRollout
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.vllm_versions import FIELD_VALUES, FIELDS, field_exists, methods_in, minor_of

pytestmark = pytest.mark.unit

TABLE = yaml.safe_load((REPO_ROOT / "tests/data/speculative-versions.yaml").read_text())
BASE = yaml.safe_load((REPO_ROOT / TABLE["base"]).read_text())
FIXTURES = sorted(REPO_ROOT.glob("tests/data/vllm-*-speculative-configs.yaml"))
REAL: list[dict[str, Any]] = [yaml.safe_load(path.read_text()) for path in FIXTURES]


def _cases(real: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    by_name = {row["name"]: row for row in real["cases"]}
    return [(case, by_name[case["name"]]) for case in TABLE["cases"]]


def _column(case: dict[str, Any], minor: int) -> dict[str, Any]:
    for row in case["vllm"]:
        first, last = (int(part) for part in row["span"].split("-"))
        if first <= minor <= last:
            return dict(row)
    raise AssertionError(f"{case['name']}: no vLLM span for 0.{minor}")


def _operator_accepts(config: dict[str, Any], version: str) -> bool:
    obj: dict[str, Any] = yaml.safe_load(yaml.safe_dump(BASE))
    obj["spec"]["engine"]["vllmVersion"] = version
    obj["spec"]["speculative"] = config
    try:
        SpecDecodeRollout.model_validate(obj)
    except ValidationError:
        return False
    return True


def test_a_real_release_was_checked() -> None:
    assert REAL, "no tests/data/vllm-*-speculative-configs.yaml"


@pytest.mark.parametrize("real", REAL, ids=lambda real: real["vllm_version"])
def test_fixture_covers_the_whole_table(real: dict[str, Any]) -> None:
    assert [row["name"] for row in real["cases"]] == [case["name"] for case in TABLE["cases"]]


@pytest.mark.parametrize("real", REAL, ids=lambda real: real["vllm_version"])
def test_table_vllm_column_is_what_vllm_did(real: dict[str, Any]) -> None:
    """The simulator reproduces the table's column; the column must be the real verdict and
    carry a fragment of the real message."""
    minor = minor_of(real["vllm_version"])
    wrong = []
    for case, seen in _cases(real):
        column = _column(case, minor)
        if column["verdict"] != seen["verdict"] or column.get("message", "") not in seen.get(
            "message", ""
        ):
            wrong.append((case["name"], column, seen))
    assert not wrong, wrong


@pytest.mark.parametrize("real", REAL, ids=lambda real: real["vllm_version"])
def test_operator_admits_only_what_vllm_accepts_and_explains_stricter_refusals(
    real: dict[str, Any],
) -> None:
    unexplained, stale = [], []
    for case, seen in _cases(real):
        operator = _operator_accepts(case["config"], real["vllm_version"])
        vllm = seen["verdict"] == "accept"
        if operator and not vllm:
            unexplained.append((case["name"], "operator admits what vLLM refuses", seen))
        elif vllm and not operator and "explained" not in seen:
            unexplained.append((case["name"], "operator refuses what vLLM runs", seen))
        elif "explained" in seen and operator == vllm:
            stale.append(case["name"])
    assert not unexplained, unexplained
    assert not stale, f"explanations for cases where the operator agrees with vLLM: {stale}"


@pytest.mark.parametrize("real", REAL, ids=lambda real: real["vllm_version"])
def test_operator_methods_and_values_are_the_release_own(real: dict[str, Any]) -> None:
    version = real["vllm_version"]
    assert methods_in(version) <= set(real["methods"])
    for field, values in FIELD_VALUES.items():
        known = {value for value, span in values.items() if minor_of(version) in span}
        assert known == set(real[field]), field
    for field in FIELDS:
        assert field_exists(field, version) == (field in real["fields"]), field


@pytest.mark.parametrize("real", REAL, ids=lambda real: real["vllm_version"])
def test_what_the_operator_does_not_model_is_listed(real: dict[str, Any]) -> None:
    """The release's methods the operator does not offer, as the script recorded them, are
    exactly the difference (so a new method in a new fixture shows up in review)."""
    version = real["vllm_version"]
    assert set(real["not_in_operator"]["methods"]) == set(real["methods"]) - methods_in(version)
    internal = {"target_model_config", "target_parallel_config", "draft_model_config",
                "draft_parallel_config"}  # fmt: skip
    unmodelled = set(real["fields"]) - set(SpeculativeConfig.model_fields) - internal
    assert set(real["not_in_operator"]["fields"]) == unmodelled
