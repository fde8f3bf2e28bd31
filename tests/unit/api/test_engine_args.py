"""extraArgs read as vLLM reads them (`specdecode.api.engine_args`): the spellings table is
refused by the models and by the generated CRD exactly where it sets a reserved
destination, our parser agrees with the real vLLM 0.32.0 parser's recorded results
(tests/data/engine-arg-spellings.vllm-0.32.0.json, made by tools/vllm_parse_spellings.py
with vLLM's own virtualenv) and with every other supported release's parser (recorded
from its wheel: tools/record_vllm_releases.sh), and the CEL regexes agree with the Python
parser.

Regenerate the recording (with vLLM 0.32.0's virtualenv, from the repository root):
    /root/.cache/specdecode/vllm-0.32.0/bin/python tools/vllm_parse_spellings.py
then `.venv/bin/python tools/engine_flag_table.py` (the flag table is generated from it)."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from sdr_crd_checker import CrdChecker

from localcluster.manifests import REPO as REPO_ROOT
from localcluster.manifests import load_example, merged
from specdecode.api import SpecDecodeRollout, engine_args
from specdecode.api.tuning_rules import max_num_seqs
from specdecode.api.workload import ModelSpec
from specdecode.tools.crdgen import output_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "render"))
from vllm_argv_oracle import destinations  # a sibling test directory

pytestmark = pytest.mark.unit

TABLE = yaml.safe_load((REPO_ROOT / "tests/data/engine-arg-spellings.yaml").read_text())
CASES: list[dict[str, Any]] = TABLE["cases"]
REAL = yaml.safe_load((REPO_ROOT / "tests/data/engine-arg-spellings.vllm-0.32.0.json").read_text())
# Every supported release's parser, recorded from its wheel without installing it
# (tools/record_vllm_releases.sh); 0.32.0 is the lane's installed release.
RELEASES: list[dict[str, Any]] = [
    json.loads(path.read_text())
    for path in sorted((REPO_ROOT / "tests/data").glob("engine-arg-spellings.vllm-*.json"))
]
RESERVED_DESTS = {reserved.dest for reserved in engine_args.RESERVED}
REFUSED = [case for case in CASES if case["sets"] is not None]
ALLOWED = [case for case in CASES if case["sets"] is None]
# The real parser's result per case; a case added to the yaml since the last recording has
# none until tools/vllm_parse_spellings.py is run again with vLLM's virtualenv (see above).
RECORDED = {tuple(real["args"]): real for real in REAL["cases"]}
UNRECORDED: list[dict[str, Any] | None] = [
    case for case in CASES if tuple(case["args"]) not in RECORDED
] or [None]  # None: a placeholder that skips, once every case is recorded


def case_id(case: dict[str, Any]) -> str:
    return " ".join(case["args"])[:60]


def with_extra_args(args: list[str]) -> dict[str, Any]:
    obj: dict[str, Any] = merged(load_example(), {"spec": {"model": {"extraArgs": args}}})
    return obj


@pytest.fixture(scope="module")
def checker() -> CrdChecker:
    crd = yaml.safe_load(output_paths(REPO_ROOT)[0].read_text())
    return CrdChecker(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def test_the_table_has_at_least_20_reserved_spellings_and_the_record_matches_it() -> None:
    """Every recorded case is still in the yaml, in the yaml's order (the recording is
    never of cases the yaml dropped); newer yaml cases may await a recording."""
    assert len(REFUSED) >= 20 and len(ALLOWED) >= 10
    recorded_in_yaml = [case["args"] for case in CASES if tuple(case["args"]) in RECORDED]
    assert recorded_in_yaml == [real["args"] for real in REAL["cases"]]


@pytest.mark.parametrize("case", REFUSED, ids=case_id)
def test_models_refuse_each_reserved_spelling_naming_argument_and_field(
    case: dict[str, Any],
) -> None:
    with pytest.raises(ValidationError) as caught:
        ModelSpec.model_validate({"name": "org/model", "extraArgs": ["--seed", "1", *case["args"]]})
    message = str(caught.value)
    assert f"model.extraArgs[2] {case['args'][0][:80]!r} sets vLLM's {case['sets']}" in message
    assert engine_args.BY_DEST[case["sets"]].source in message


@pytest.mark.parametrize("case", ALLOWED, ids=case_id)
def test_models_accept_each_allowed_spelling(case: dict[str, Any]) -> None:
    SpecDecodeRollout.model_validate(with_extra_args(case["args"]))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_crd_refuses_exactly_the_reserved_spellings(
    case: dict[str, Any], checker: CrdChecker
) -> None:
    errors = checker.errors(with_extra_args(case["args"]))
    if case["sets"] is None:
        assert errors == []
    else:
        assert [e.path for e in errors] and {e.path for e in errors} == {"spec.model.extraArgs"}
        assert any(f"must not set vLLM's {case['sets']} " in e.message for e in errors)


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if tuple(case["args"]) in RECORDED],
    ids=case_id,
)
def test_the_real_vllm_parser_sets_what_the_table_says(case: dict[str, Any]) -> None:
    """vLLM 0.32.0 on the operator's argv plus the case: an allowed spelling parses and sets
    no reserved destination; a reserved one sets it (a config file sets what it holds), or
    vLLM refuses the argv itself (then refusing it earlier costs nothing)."""
    real = RECORDED[tuple(case["args"])]
    reserved_changed = set(real["changed"]) & RESERVED_DESTS
    if case["sets"] is None:
        assert real["error"] is None and reserved_changed == set()
    elif real["error"] is None:
        expected = {"speculative_config"} if case["sets"] == "config" else {case["sets"]}
        assert reserved_changed == expected


@pytest.mark.parametrize("case", UNRECORDED, ids=lambda c: c and case_id(c))
def test_unrecorded_cases_set_what_the_table_says_by_the_recorded_actions(
    case: dict[str, Any] | None,
) -> None:
    """Until the real parser is run on them (the recording above), cases added to the yaml
    are checked against the recorded parser's own action table: vLLM's argv rewriting
    transcribed in front of argparse loaded with the recorded actions (`vllm_argv_oracle`).
    The reserved destination a case names must be what that parser sets, and an allowed
    case must parse and set none. Once recorded, the case moves to the test above."""
    if case is None:
        pytest.skip("every yaml case has a real-parser recording")
    operator_argv = REAL["operator_argv"][1:]  # the serve parser's own argv: no `serve`
    base = destinations(operator_argv)
    found = destinations(operator_argv + case["args"])
    assert base is not None
    if case["sets"] is None:
        assert found is not None
    if found is not None:
        changed = {dest for dest, value in found.items() if base.get(dest) != value}
        expected = set() if case["sets"] is None else {case["sets"]}
        assert changed & RESERVED_DESTS == expected


def test_without_speculative_drops_every_spelling_of_the_speculative_family() -> None:
    """The candidate's and the Patch strategy's args: nothing left that speculates, in
    the JSON form or vLLM 0.32's shorthands (their values go with them)."""
    args = ["--seed", "1", "--spec-method", "ngram", "--spec_tokens=3", "-sc", "{}"]
    args += ["--spec-mod", "x", "--speculative-config.method", "ngram", "--enforce-eager"]
    assert engine_args.without_speculative(args) == ["--seed", "1", "--enforce-eager"]


def release_id(release: dict[str, Any]) -> str:
    return str(release["vllm"])


@pytest.mark.parametrize("release", RELEASES, ids=release_id)
def test_every_release_parses_each_case_as_the_table_says(release: dict[str, Any]) -> None:
    """Each supported release's own parser on the operator's argv plus each case: a
    reserved spelling sets its destination or that release refuses the argv (then refusing
    it earlier costs nothing); an allowed spelling sets no reserved destination in any
    release (a release without the flag refuses it)."""
    wrong = []
    for case, real in zip(CASES, release["cases"], strict=True):
        assert real["args"] == case["args"]
        reserved_changed = set(real["changed"]) & RESERVED_DESTS
        if case["sets"] is None:
            expected = set()
        elif real["error"] is None:
            expected = {"speculative_config"} if case["sets"] == "config" else {case["sets"]}
        else:
            continue
        if reserved_changed != expected:
            wrong.append(f"{case['args']}: {sorted(reserved_changed)}")
    assert wrong == []


@pytest.mark.parametrize("release", RELEASES, ids=release_id)
def test_reserved_destinations_list_every_option_vllm_has_for_them(
    release: dict[str, Any],
) -> None:
    """No alias of any release is missed (`--device-memory-utilization` sets
    gpu_memory_utilization in 0.32)."""
    for action in release["actions"]:
        if action["dest"] in RESERVED_DESTS:
            assert set(action["options"]) <= set(engine_args.BY_DEST[action["dest"]].options)
    dests = {action["dest"] for other in RELEASES for action in other["actions"]}
    assert RESERVED_DESTS - dests == set()


@pytest.mark.parametrize("release", RELEASES, ids=release_id)
def test_no_other_vllm_option_is_refused_in_any_exact_spelling(release: dict[str, Any]) -> None:
    """Refusing every prefix of a reserved option, of any release, refuses no real flag of
    any release."""
    wrong = []
    for action in release["actions"]:
        for option in action["options"]:
            spellings = [option, f"{option}=1"]
            if option.startswith("--"):
                spellings.append("--" + option[2:].replace("-", "_"))
            for spelling in spellings:
                reserved = engine_args.reserved_for(spelling)
                found = None if reserved is None else reserved.dest
                expected = action["dest"] if action["dest"] in RESERVED_DESTS else None
                if found != expected:
                    wrong.append(f"{spelling}: {found}")
    assert wrong == []


def every_reserved_spelling() -> list[tuple[list[str], str]]:
    """`--a-b x` and `--a_b=x` of every option string of every non-free destination of
    every release's table (as the e2e test sends them to the API server)."""
    found = []
    for reserved in engine_args.RESERVED:
        for option in reserved.options:
            attached = "--" + option[2:].replace("-", "_") if option.startswith("--") else option
            found += [([option, "x"], reserved.dest), ([f"{attached}=x"], reserved.dest)]
    return found


@pytest.mark.parametrize("args,dest", every_reserved_spelling())
def test_models_and_crd_refuse_every_reserved_option_of_every_release(
    args: list[str], dest: str, checker: CrdChecker
) -> None:
    with pytest.raises(ValidationError, match=f"sets vLLM's {dest} "):
        ModelSpec.model_validate({"name": "org/model", "extraArgs": args})
    errors = checker.errors(with_extra_args(args))
    assert any(f"must not set vLLM's {dest} " in e.message for e in errors)


def tokens() -> list[str]:
    """Table arguments, every vLLM option mangled a few ways, and random near-misses."""
    rng = random.Random(20261126)
    options = sorted(
        {o for release in RELEASES for action in release["actions"] for o in action["options"]}
    )
    found = [arg for case in CASES for arg in case["args"]]
    for option in options:
        cut = option[: rng.randint(2, len(option))]
        found += [cut, cut.replace("-", "_"), f"{cut}.key", f"{cut}=v", f"{option}x"]
    alphabet = "-_.=sctpd"
    found += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(500)]
    return found


def test_the_cel_regexes_agree_with_the_parser() -> None:
    for token in tokens():
        python = {reserved.dest for reserved in engine_args.reserved_set_by(token)}
        cel = {
            reserved.dest
            for reserved in engine_args.RESERVED
            if re.search(engine_args.reserved_arg_regex(reserved), token)
        }
        assert python == cel, token


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--max-num-seqs", "64"], 64),
        (["--max_num_seqs=32"], 32),
        (["--max-num-seqs=8", "--enforce-eager", "--max_num_seqs", "16"], 16),
        (["--max-num-seqs"], None),
        (["--max-num-seqs", "--enforce-eager"], None),
        (["--max-num-batched-tokens", "64"], None),
    ],
)
def test_max_num_seqs_reads_vllm_spellings(args: list[str], expected: int | None) -> None:
    assert max_num_seqs(args) == expected
