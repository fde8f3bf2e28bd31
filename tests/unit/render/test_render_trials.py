"""A tuning trial's engines: the rollout's shadow pair, named after the trial, owned by the
tuning; its stored blocks round-trip; its watch events wake the tuning."""

from __future__ import annotations

import pytest

from specdecode.adapters.kube.cache import ClusterView
from specdecode.adapters.kube.tunings import pack_blocks, unpack_blocks
from specdecode.adapters.render_trials import (
    render_trial_children,
    trial_name,
    trial_owner,
)
from specdecode.api.tuning import SpecDecodeTuningSpec
from specdecode.domain.observations import LatencyBlock, LatencySamples
from specdecode.domain.sketch import Sketch
from specdecode.reconciler.trials import with_earlier_blocks
from specdecode.reconciler.wakeups import Wakeups

pytestmark = pytest.mark.unit

SPEC = SpecDecodeTuningSpec.model_validate(
    {
        "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
        "engine": {"image": "vllm/vllm-openai:v0.33.0"},
        "traffic": {"builtinWorkload": "code"},
        "searchSpace": {"candidates": [{"method": "suffix", "num_speculative_tokens": 8}]},
    }
)


def test_a_trial_renders_a_baseline_and_a_candidate_owned_by_the_tuning() -> None:
    config = SPEC.configs()[0]
    name = trial_name("a-very-long-tuning-name-" * 3, "uid-1", 1, config.fingerprint(), 16)
    assert len(f"{name}-candidate") <= 63 and name.startswith("a-very-long-tuning-name-")
    owner = trial_owner("tune", "ns", "uid-1", name)
    children = render_trial_children(owner, SPEC.trial_spec(config))
    names = [(c["kind"], c["metadata"]["name"]) for c in children]
    assert names == [
        ("Deployment", f"{name}-baseline"),
        ("Service", f"{name}-baseline"),
        ("Deployment", f"{name}-candidate"),
        ("Service", f"{name}-candidate"),
    ]  # no production: a trial serves nobody
    for child in children:
        (reference,) = child["metadata"]["ownerReferences"]
        assert (reference["kind"], reference["name"], reference["uid"]) == (
            "SpecDecodeTuning",
            "tune",
            "uid-1",
        )
        assert child["metadata"]["labels"]["specdecode.io/rollout"] == name
    candidate_args = children[2]["spec"]["template"]["spec"]["containers"][0]["args"]
    baseline_args = children[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--speculative-config" in candidate_args
    assert "--speculative-config" not in baseline_args


def test_trial_names_differ_per_cell_generation_and_tuning() -> None:
    names = {
        trial_name("t", uid, g, c, load)
        for uid in ("uid-1", "uid-2")
        for g in (1, 2)
        for c in ("a", "b")
        for load in (4, 16)
    }
    assert len(names) == 16
    # two tunings whose names share their first 40 characters still never collide
    long_a, long_b = "x" * 40 + "-one", "x" * 40 + "-two"
    assert trial_name(long_a, "uid-a", 1, "c", 4) != trial_name(long_b, "uid-b", 1, "c", 4)


def test_stored_blocks_round_trip() -> None:
    block = LatencyBlock(
        start=10.0,
        seconds=2.0,
        per_chunk_itl=Sketch.of([0.01, 0.02]),
        per_token_itl=Sketch.of([0.01]),
        time_per_output_token=Sketch.of([0.015]),
        requests_ok=3,
        chunks=2,
    )
    restored = unpack_blocks(pack_blocks({"baseline": [block], "candidate": []}))
    assert restored == {"baseline": [block], "candidate": []}


def test_a_trials_watch_event_wakes_its_tuning() -> None:
    wakeups = Wakeups()
    wakeups.register("tuning:ns/t")
    assert not wakeups.wake("ns/t-tabc")  # not followed yet: unknown key
    wakeups.follow("ns/t-tabc", "tuning:ns/t")
    assert wakeups.wake("ns/t-tabc")
    wakeups.unfollow("tuning:ns/t")
    assert not wakeups.wake("ns/t-tabc")


def test_the_cache_finds_a_tunings_trials_by_owner_not_by_name() -> None:
    """A user's rollout `t-tp4` shares the trials' name prefix: it must never be found."""

    def owned(uid: str) -> dict[str, object]:
        return {"metadata": {"name": "x", "ownerReferences": [{"uid": uid}]}}

    view = ClusterView(
        deployments={("ns", "t-tabc"): [owned("uid-t")], ("other", "t-tdef"): [owned("uid-t")]},
        services={("ns", "t-tghi"): [owned("uid-t")], ("ns", "t-tgone"): []},
        pods={("ns", "t-tp4"): [owned("uid-rollout")]},
    )
    assert view.labelled_owned_by("ns", "uid-t") == {"t-tabc", "t-tghi"}


def test_a_resumed_cell_counts_each_block_once() -> None:
    """The store holds earlier runs' blocks and this run's of earlier looks; only those
    before this run's window are added to it (the window has this run's afresh)."""

    def block(start: float) -> LatencyBlock:
        return LatencyBlock(start=start, seconds=2.0, requests_ok=1, chunks=1)

    window = LatencySamples(blocks=(block(100.0), block(102.0)), window_seconds=4.0, shards=1)
    stored = [block(10.0), block(12.0), block(100.0)]  # two from the paused run, one of ours
    merged = with_earlier_blocks(window, stored, since=100.0)
    assert isinstance(merged, LatencySamples)
    assert [b.start for b in merged.blocks] == [10.0, 12.0, 100.0, 102.0]
    assert merged.window_seconds == 8.0
    incomplete = LatencySamples(incomplete="candidate load incomplete: shard 0")
    assert with_earlier_blocks(incomplete, stored, since=100.0) is incomplete
