"""Every supported vLLM release against a table of speculative configs: the models and the
generated CRD (schema and CEL, offline) accept and refuse the same configs, with the same
message; the table's vLLM column (what vLLM does at start-up, for the simulator) is
complete and agrees with the facts module wherever the operator follows vLLM."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from sdr_crd_checker import CrdChecker

from localcluster.manifests import REPO as REPO_ROOT
from specdecode.api import SpecDecodeRollout
from specdecode.api.vllm_versions import NEWEST_MINOR, OLDEST_SUPPORTED, is_supported
from specdecode.tools.crdgen import output_paths

pytestmark = pytest.mark.unit

TABLE = yaml.safe_load((REPO_ROOT / "tests/data/speculative-versions.yaml").read_text())
BASE = yaml.safe_load((REPO_ROOT / TABLE["base"]).read_text())
# One release per minor for the models; the CRD (cel-python is slow) at the releases on
# both sides of each boundary of the case's span, the oldest and the newest.
EVERY_RELEASE = ["0.11.2", *(f"0.{minor}.0" for minor in range(12, NEWEST_MINOR + 1))]


def _span(text: str) -> range:
    if text == "none":
        return range(0)
    first, last = (int(part) for part in text.split("-"))
    return range(first, last + 1)


@dataclass(frozen=True)
class Case:
    """One row of the table."""

    name: str
    config: dict[str, Any]
    operator: range
    message: str | None
    crd_message: str | None
    vllm: list[dict[str, Any]]


CASES = [
    Case(
        row["name"],
        row["config"],
        _span(row["operator"]),
        row.get("message"),
        row.get("crd_message", row.get("message")),
        row["vllm"],
    )
    for row in TABLE["cases"]
]


def rollout(config: dict[str, Any], version: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(yaml.safe_dump(BASE))
    obj["spec"]["engine"]["vllmVersion"] = version
    obj["spec"]["speculative"] = config
    return obj


def model_errors(obj: dict[str, Any]) -> list[str]:
    try:
        SpecDecodeRollout.model_validate(obj)
    except ValidationError as error:
        return [item["msg"] for item in error.errors()]
    return []


def _boundaries(span: range) -> list[str]:
    minors = {OLDEST_SUPPORTED[1], NEWEST_MINOR}
    if span:
        minors |= {span[0] - 1, span[0], span[-1], span[-1] + 1}
    return [EVERY_RELEASE[m - OLDEST_SUPPORTED[1]] for m in sorted(minors) if m in range(11, 34)]


@pytest.fixture(scope="module")
def checker() -> CrdChecker:
    crd = yaml.safe_load(output_paths(REPO_ROOT)[0].read_text())
    return CrdChecker(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_models_follow_the_table_in_every_release(case: Case) -> None:
    for version in EVERY_RELEASE:
        errors = model_errors(rollout(case.config, version))
        minor = int(version.split(".")[1])
        if minor in case.operator:
            assert errors == [], f"{version}: {errors}"
        else:
            assert case.message is not None
            assert any(case.message in error for error in errors), f"{version}: {errors}"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_crd_gives_the_models_verdict(case: Case, checker: CrdChecker) -> None:
    for version in _boundaries(case.operator):
        errors = checker.errors(rollout(case.config, version))
        minor = int(version.split(".")[1])
        if minor in case.operator:
            assert errors == [], f"{version}: {errors}"
        else:
            assert case.crd_message is not None
            assert any(case.crd_message in e.message for e in errors), f"{version}: {errors}"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_vllm_column_covers_every_release_once(case: Case) -> None:
    covered = [minor for row in case.vllm for minor in _span(row["span"])]
    assert sorted(covered) == list(range(OLDEST_SUPPORTED[1], NEWEST_MINOR + 1))
    for row in case.vllm:
        assert row["verdict"] in {"accept", "ignore", "refuse"}
        assert (row["verdict"] == "refuse") == ("message" in row), row


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_operator_accepts_only_what_vllm_runs_as_written(case: Case) -> None:
    """Where the operator accepts, vLLM starts and uses every key (never ignores one)."""
    accepted_by_vllm = {
        minor for row in case.vllm if row["verdict"] == "accept" for minor in _span(row["span"])
    }
    assert set(case.operator) <= accepted_by_vllm


@pytest.mark.parametrize(
    ("version", "supported"),
    [("0.11.1", False), ("0.11.2", True), ("0.33.9", True), ("0.34.0", False), ("1.0.0", False)],
)
def test_supported_range(version: str, supported: bool, checker: CrdChecker) -> None:
    obj = rollout(BASE["spec"]["speculative"], version)
    assert is_supported(version) is supported
    assert (model_errors(obj) == []) is supported
    assert (checker.errors(obj) == []) is supported
