"""How the recommendation depends on production's running-request histogram: the report
names what weighted the bands and what equal weights would have recommended, and a
histogram at high load flips the single config where a config's break-even lies inside
the ladder (the control: the same run weighted equally keeps the other config)."""

from __future__ import annotations

import random

import pytest
from test_tuning import full_length_run, scenario, synthetic
from tuning_sim import SimulatedTuning

from specdecode.domain.tuning.render import markdown, to_json
from specdecode.domain.tuning.report import build_report
from specdecode.reconciler.tuning_boundary import plan_of

pytestmark = pytest.mark.unit

BEFORE_SCHEDULES = {"engine": {"image": "vllm/vllm-openai:v0.23.0"}}  # one k for every load
# eagle3 k=1 and k=2: k=2 leads at low load and loses to plain decoding at 64 (break-even
# between 8 and 64), k=1 wins everywhere by less. Equal weights favour k=2 (mean 1.267 vs
# 1.217); production at 64 and above favours k=1 (1.10 vs 0.85).
CROSSING = {1: [1.30, 1.60], 8: [1.25, 1.35], 64: [1.10, 0.85]}
HIGH_LOAD = {50: 0.5, 64: 0.3, 90: 0.2}  # what the adapter returns: share of busy samples


def crossing_run(seed: int, **spec: object) -> SimulatedTuning:
    """`synthetic` on CROSSING before schedules, finished; productionConcurrency may be set
    (it is not a ladder load then: the band it falls in is weighted)."""
    production = spec.pop("productionConcurrency", None)
    sim = synthetic(seed, CROSSING, **BEFORE_SCHEDULES, **spec)
    if production is not None:
        wire = {**sim.spec.to_wire(), "productionConcurrency": production}
        sim.spec = type(sim.spec).model_validate(wire)
        sim.run.plan = plan_of(sim.spec)
    sim.finish()
    return sim


@pytest.mark.parametrize("seed", range(5))
def test_production_at_high_load_flips_the_single_config_equal_weights_do_not(seed: int) -> None:
    run = crossing_run(seed).run
    weighted = build_report(run, HIGH_LOAD)
    control = build_report(run, None)
    assert weighted.band_weights == (0.0, 0.0, 1.0)
    assert weighted.recommendation == "eagle3 k=1"
    assert control.recommendation == "eagle3 k=2" == control.uniform_recommendation
    assert weighted.uniform_recommendation == control.recommendation  # said in the report
    assert "with equal weights: eagle3 k=2" in markdown(weighted)


def test_the_report_names_what_weighted_the_bands() -> None:
    named = crossing_run(0, production={"deployment": "llama", "windowSeconds": 7200}).run
    assert build_report(named, HIGH_LOAD).weights_source == (
        "production's vllm:num_requests_running over 7200 s (Deployment llama)"
    )
    assert build_report(named, {}).weights_source == "nothing known (equal per band)"
    fallback = crossing_run(0, productionConcurrency=64).run
    assert build_report(fallback, {}).weights_source == "productionConcurrency 64"
    assert build_report(fallback, None).recommendation == "eagle3 k=1"
    assert build_report(fallback, HIGH_LOAD).weights_source == (
        "production's running-request histogram"
    )
    low = build_report(fallback, {1: 1.0})  # a known histogram overrides the fallback
    assert (low.band_weights[0], low.recommendation) == (1.0, "eagle3 k=2")


def test_with_a_schedule_one_family_does_not_depend_on_the_weights() -> None:
    # vLLM 0.24+: the family runs its best k per band, so only the choice between families
    # can move with the weights; with one family the patch is the same either way.
    report = build_report(full_length_run(1).run, HIGH_LOAD)
    assert report.recommendation == report.uniform_recommendation
    assert report.recommendation.startswith("eagle3 k=")
    assert " schedule [[1, " in report.recommendation


def test_the_new_fields_round_trip_through_json_and_have_defaults() -> None:
    base = scenario(image="vllm/vllm-openai:v0.23.0")
    report = build_report(SimulatedTuning(base, base.tuning_spec(), random.Random(3)).finish())
    decoded = to_json(report)
    assert '"weights_source": "productionConcurrency 128"' in decoded
    assert '"uniform_recommendation": "eagle3 k=' in decoded
    fields = type(report).__dataclass_fields__
    assert all(fields[name].default == "" for name in ("weights_source", "recommendation"))
