"""The invalid-input table: each case is refused by the models, naming the field, and by
the generated CRD (offline: schema + CEL) exactly when the table says the API server can."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError
from sdr_crd_checker import CrdChecker

from localcluster.manifests import REPO as REPO_ROOT
from localcluster.manifests import InvalidCase, load_example, rollout_examples
from localcluster.manifests import load_invalid_cases as load_cases
from specdecode.api import SpecDecodeRollout
from specdecode.tools.crdgen import output_paths

pytestmark = pytest.mark.unit

CASES = load_cases()
EXAMPLES = rollout_examples()


@pytest.fixture(scope="module")
def checker() -> CrdChecker:
    crd = yaml.safe_load(output_paths(REPO_ROOT)[0].read_text())
    return CrdChecker(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def wire_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as a Kubernetes field path: spec.stages[0].name."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path.lstrip(".")


def names_field(at: str, message: str, field: str) -> bool:
    """The error sits at the field, or at a parent object with the field in its message."""
    if at == field:
        return True
    last_name = re.sub(r"\[\d+\]", "", field).rsplit(".", 1)[-1]
    return field.startswith(at) and last_name in message


def test_table_is_big_enough_and_named_uniquely() -> None:
    names = [case.name for case in CASES]
    assert len(names) >= 25
    assert len(names) == len(set(names))
    assert {case.rejected_by for case in CASES} <= {"apiserver", "operator"}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_models_refuse_and_name_the_field(case: InvalidCase) -> None:
    with pytest.raises(ValidationError) as caught:
        SpecDecodeRollout.model_validate(case.obj)
    errors = caught.value.errors()
    matching = [
        e
        for e in errors
        if case.message in e["msg"] and names_field(wire_path(e["loc"]), e["msg"], case.field)
    ]
    assert matching, f"no error names {case.field} with {case.message!r}: {errors}"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_crd_refuses_exactly_what_the_table_says(case: InvalidCase, checker: CrdChecker) -> None:
    errors = checker.errors(case.obj)
    if case.rejected_by == "operator":
        assert errors == [], "the API server would refuse this; mark it apiserver"
        return
    at_field = [e for e in errors if names_field(e.path, e.message, case.field)]
    assert at_field, f"no CRD error at {case.field}: {errors}"
    if case.server_message is not None:
        assert any(case.server_message in e.message for e in at_field), at_field


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_examples_pass_models_and_crd(path: Path, checker: CrdChecker) -> None:
    obj = load_example(path)
    SpecDecodeRollout.model_validate(obj)
    assert checker.errors(obj) == []


def test_every_method_has_an_example() -> None:
    methods = {load_example(path)["spec"]["speculative"]["method"] for path in EXAMPLES}
    assert methods == {"eagle", "eagle3", "ngram", "suffix", "mtp", "draft_model"}
