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
    trial_prefix,
)
from specdecode.api.tuning import SpecDecodeTuningSpec
from specdecode.domain.observations import LatencyBlock
from specdecode.domain.sketch import Sketch
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
    name = trial_name("a-very-long-tuning-name-" * 3, 1, config.fingerprint(), 16)
    assert len(f"{name}-candidate") <= 63 and name.startswith(trial_prefix("a-very-long-"[:11]))
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


def test_trial_names_differ_per_cell_and_per_generation() -> None:
    names = {trial_name("t", g, c, load) for g in (1, 2) for c in ("a", "b") for load in (4, 16)}
    assert len(names) == 8


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


def test_the_cache_finds_a_tunings_trials_by_prefix() -> None:
    pod = {"metadata": {"name": "p"}}
    view = ClusterView(
        deployments={("ns", "t-tabc"): [pod], ("other", "t-tdef"): [pod]},
        services={("ns", "t-tghi"): [pod], ("ns", "t-tgone"): []},
        pods={("ns", "rollout"): [pod]},
    )
    assert view.labelled_with_prefix("ns", "t-t") == {"t-tabc", "t-tghi"}
