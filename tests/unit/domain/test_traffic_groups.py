"""Traffic labels: where a request's class comes from, the bands' edges, the bound on
groups, and the split's size in status."""

from __future__ import annotations

import json

import pytest

from specdecode.api.acceptance_by_traffic import MAX_TRAFFIC_GROUPS
from specdecode.domain.acceptance_moments import AcceptedMoments, GroupEvidence
from specdecode.domain.acceptance_split import acceptance_by_traffic
from specdecode.domain.latency_block import LatencyBlock
from specdecode.domain.observations import LatencySamples
from specdecode.domain.prompts import (
    PromptSourceError,
    SamplingDefaults,
    builtin_prompts,
    parse_jsonl,
)
from specdecode.domain.traffic_groups import (
    MAX_GROUPS,
    OTHER_GROUP,
    fold_groups,
    group_keys,
    group_of,
    length_band,
    parse_key,
    temperature_band,
)

pytestmark = pytest.mark.unit

GREEDY = SamplingDefaults(temperature=0.0, top_p=1.0)


def test_a_requests_class_is_its_class_else_its_workload_else_the_builtin_set() -> None:
    lines = [
        {"prompt": "a", "class": "support-bot", "workload": "chat"},
        {"prompt": "b", "workload": "translation", "temperature": 0.3, "max_tokens": 600},
        {"prompt": "c", "temperature": 1.0, "max_tokens": 128},
    ]
    requests = parse_jsonl("\n".join(json.dumps(line) for line in lines), 256, GREEDY)
    assert [group_of(r).key for r in requests] == [
        "support-bot/greedy/medium",
        "translation/low/long",
        "unlabelled/high/short",
    ]
    (generated,) = builtin_prompts("rag", 1, 0, 64, GREEDY)
    assert group_of(generated).key == "rag/greedy/short"


@pytest.mark.parametrize("label", ["a b", "x/y", "", "é", "-lead", "x" * 41, 3])
def test_a_class_that_cannot_be_a_label_is_refused_naming_the_line(label: object) -> None:
    with pytest.raises(PromptSourceError, match="line 1: class must be"):
        parse_jsonl(json.dumps({"prompt": "p", "class": label}), 8, GREEDY)


def test_band_edges() -> None:
    bands = [temperature_band(t) for t in (0.0, 0.01, 0.5, 0.51, 2.0)]
    assert bands == ["greedy", "low", "low", "high", "high"]
    lengths = [length_band(n) for n in (1, 128, 129, 512, 513)]
    assert lengths == ["short", "short", "medium", "medium", "long"]


def test_the_load_pods_and_the_status_share_one_bound() -> None:
    assert MAX_GROUPS == MAX_TRAFFIC_GROUPS


def test_a_prompt_set_with_too_many_groups_folds_its_smallest_into_other() -> None:
    lines = [{"prompt": "p", "class": f"c{i:02d}"} for i in range(20) for _ in range(i + 1)]
    requests = parse_jsonl("\n".join(json.dumps(line) for line in lines), 64, GREEDY)
    keys = group_keys(requests)
    assert len(keys) == len(requests)
    assert len(set(keys)) == MAX_GROUPS
    kept = {parse_key(key).traffic_class for key in keys} - {"other"}
    assert kept == {f"c{i:02d}" for i in range(20 - (MAX_GROUPS - 1), 20)}  # the largest
    assert keys.count(OTHER_GROUP.key) == sum(range(1, 20 - (MAX_GROUPS - 1) + 1))


def test_the_operator_folds_a_report_with_too_many_groups_by_requests() -> None:
    groups = {
        f"c{i:02d}/greedy/short": GroupEvidence(AcceptedMoments.of([(10.0, 5.0)] * (i + 1)))
        for i in range(30)
    }
    folded = fold_groups(groups)
    assert len(folded) == MAX_GROUPS
    assert folded[OTHER_GROUP.key].requests == sum(range(1, 30 - (MAX_GROUPS - 1) + 1))
    assert sum(g.requests for g in folded.values()) == sum(g.requests for g in groups.values())
    window = LatencySamples(blocks=(LatencyBlock(0.0, 2.0, by_traffic=groups),), shards=1)
    split = acceptance_by_traffic(window)
    assert len(split) == MAX_TRAFFIC_GROUPS
    assert split[0].traffic_class == "c29" and split[-1].traffic_class == "other"
