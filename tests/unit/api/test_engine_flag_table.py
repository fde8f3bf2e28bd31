"""The engine flag table is the recorded parsers, every destination classified: each
recorded vLLM release has a committed table (operator/specdecode/api/engine_flags/) that
names exactly the destinations and option strings of its recording, each with one class,
and the hand classification names nothing no recording has. This is the CI check for a
new recording (tools/vllm_parse_spellings.py) and for a reclassification: regenerate with
`.venv/bin/python tools/engine_flag_table.py`."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from localcluster.manifests import REPO as REPO_ROOT
from specdecode.api.engine_flag_classes import CLASSIFIED, FREE_BY_READING, FlagClass
from specdecode.api.engine_flag_table import TABLE_DIR, TABLES, table_of, table_path
from specdecode.api.vllm_versions import NEWEST_MINOR, OLDEST_SUPPORTED, is_supported, minor_of

pytestmark = pytest.mark.unit

RECORDINGS = sorted((REPO_ROOT / "tests/data").glob("engine-arg-spellings.vllm-*.json"))
# A free destination with one of these in its name must be read in vLLM's source and
# listed in FREE_BY_READING: a new speculation or stats switch is never free by default.
SUSPECT = re.compile(r"(^|_)(spec|speculative|draft)(_|$)|stats|metric")


def recording(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def table_problems(recorded: dict[str, Any]) -> list[str]:
    """Why the committed table of a recording's release does not hold that recording."""
    path = table_path(recorded["vllm"])
    if not path.exists():
        return [f"no table for vLLM {recorded['vllm']}: run tools/engine_flag_table.py"]
    committed = json.loads(path.read_text())
    recorded_dests = {action["dest"] for action in recorded["actions"]}
    table_dests = {flag["dest"] for flag in committed["flags"]}
    problems = [f"unclassified: {dest}" for dest in sorted(recorded_dests - table_dests)]
    problems += [f"not in the recording: {dest}" for dest in sorted(table_dests - recorded_dests)]
    if not problems and committed != table_of(recorded):
        problems.append("options or classes differ from the recording and engine_flag_classes")
    return problems


def suspect_free(recorded: dict[str, Any]) -> list[str]:
    """Free destinations whose names suggest speculation or stats, not yet read."""
    return [
        action["dest"]
        for action in recorded["actions"]
        if SUSPECT.search(action["dest"])
        and action["dest"] not in CLASSIFIED
        and action["dest"] not in FREE_BY_READING
    ]


def test_there_is_a_recording_and_a_table_per_recorded_release() -> None:
    assert RECORDINGS
    assert sorted(TABLES) == sorted(recording(path)["vllm"] for path in RECORDINGS)
    assert len(list(TABLE_DIR.glob("vllm-*.json"))) == len(TABLES)


def test_every_release_the_crd_admits_has_a_table() -> None:
    """The oldest supported release and a release of every supported minor are recorded
    (tools/record_vllm_releases.sh), and nothing unsupported is."""
    assert ".".join(map(str, OLDEST_SUPPORTED)) in TABLES
    assert all(is_supported(release) for release in TABLES)
    minors = {minor_of(release) for release in TABLES}
    assert minors == set(range(OLDEST_SUPPORTED[1], NEWEST_MINOR + 1))


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_each_recorded_release_has_every_destination_classified_once(path: Path) -> None:
    recorded = recording(path)
    assert table_problems(recorded) == []
    dests = [flag.dest for flag in TABLES[recorded["vllm"]]]
    assert len(dests) == len(set(dests))
    assert suspect_free(recorded) == []


def test_the_hand_classification_names_only_recorded_destinations() -> None:
    recorded = {action["dest"] for path in RECORDINGS for action in recording(path)["actions"]}
    assert set(CLASSIFIED) - recorded == set()
    assert set(FREE_BY_READING) - recorded == set()
    assert set(FREE_BY_READING) & set(CLASSIFIED) == set()
    assert all(c.flag_class is not FlagClass.FREE for c in CLASSIFIED.values())


def test_vllm_032_speculates_through_its_shorthands_too() -> None:
    classes = {flag.dest: flag.flag_class for flag in TABLES["0.32.0"]}
    speculative = {dest for dest, cls in classes.items() if cls is FlagClass.SPECULATIVE}
    assert speculative == {"speculative_config", "spec_method", "spec_model", "spec_tokens"}
    assert classes["api_key"] is FlagClass.UNJUDGEABLE
    assert classes["disable_log_stats"] is FlagClass.STATS_OFF
    assert classes["per_request_spec_decode_metrics"] is FlagClass.FREE


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_the_check_fails_on_a_new_or_a_lost_destination(path: Path) -> None:
    """Controls, on every release's recording: a destination the table lacks (a new
    release's `--spec-draft-tokens`), one the table has and the recording lacks, or an
    option string the table does not list, is refused."""
    real = recording(path)
    grown = copy.deepcopy(real)
    grown["actions"].append({"options": ["--spec-draft-tokens"], "dest": "spec_draft_tokens"})
    assert table_problems(grown) == ["unclassified: spec_draft_tokens"]
    assert suspect_free(grown) == ["spec_draft_tokens"]
    shrunk = copy.deepcopy(real)
    lost = next(a["dest"] for a in real["actions"] if a["dest"] in CLASSIFIED and a["options"])
    shrunk["actions"] = [a for a in real["actions"] if a["dest"] != lost]
    assert table_problems(shrunk) == [f"not in the recording: {lost}"]
    renamed = copy.deepcopy(real)
    renamed["actions"][-1]["options"] = ["--renamed"]
    assert table_problems(renamed) == [
        "options or classes differ from the recording and engine_flag_classes"
    ]
