"""The tuning's boundary: a wire spec into the domain's `TuningPlan`, the report back out as
status, and the recommended patch a config the wire model takes as it is."""

from __future__ import annotations

import random

import pytest
from tuning_sim import Scenario, SimulatedTuning

from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.tuning import SpecDecodeTuningSpec
from specdecode.api.tuning_status import SpecDecodeTuningStatus, TuningPhase
from specdecode.domain.gates import TuningFigure, tuning_type
from specdecode.domain.tuning.measure import MIN_BLOCKS, TAIL_QUANTILE
from specdecode.domain.tuning.model import Limits, Pace, Production
from specdecode.domain.tuning.report import build_report
from specdecode.reconciler.tuning_boundary import TRIAL_GATES, plan_of, status_of
from specdecode.vocabulary import ItlDefinition

pytestmark = pytest.mark.unit

EAGLE3 = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
WIRE = {
    "model": {
        "name": "meta-llama/Llama-3.1-8B-Instruct",
        "extraArgs": ["--max-num-seqs", "128"],
    },
    "gpuPool": {"gpusPerReplica": 2, "tensorParallelSize": 2},
    "engine": {"image": "vllm/vllm-openai:v0.33.0"},
    "searchSpace": {
        "grids": [{**EAGLE3, "numSpeculativeTokens": [2, 4]}],
        "candidates": [{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}],
    },
    "concurrencyLadder": [1, 8, 64],
    "productionConcurrency": 16,
    "production": {"deployment": "chat-prod", "windowSeconds": 7200},
    "objective": "MaximiseThroughput",
    "constraints": {"maxTailRatio": 1.3, "minAlpha": 0.4},
    "trial": {"warmupSeconds": 20, "lookSeconds": 40, "maxSeconds": 400, "tolerance": 0.1},
    "budget": {"maxParallelTrials": 3, "maxGpuSeconds": 90_000},
}


def test_a_wire_spec_becomes_the_plan_it_says() -> None:
    spec = SpecDecodeTuningSpec.model_validate(WIRE)
    plan = plan_of(spec)
    assert plan.loads == (1, 8, 16, 64)  # production concurrency merged in
    assert plan.objective == "MaximiseThroughput"
    default_error_rate = spec.constraints.max_error_rate  # the gate's default, from api
    assert plan.limits == Limits(1.3, default_error_rate, 0.4)
    assert plan.pace == Pace(20, 40, 400, 0.1, 0.05)
    assert (plan.pairs_at_once, plan.gpu_seconds_budget, plan.gpus_per_replica) == (3, 90_000, 2)
    assert plan.max_batch == 128 and plan.with_schedule
    assert plan.production == Production("chat-prod", 7200)
    # Every candidate's wire form reads back as the config it came from, in search order.
    configs = spec.configs()
    assert [c.fingerprint for c in plan.candidates] == [c.fingerprint() for c in configs]
    for candidate, config in zip(plan.candidates, configs, strict=True):
        assert SpeculativeConfig.model_validate(candidate.wire) == config
        assert (candidate.method, candidate.k) == (config.method, config.num_speculative_tokens)
    assert [(c.method, c.fixed_k) for c in plan.candidates] == [
        ("ngram", False),  # candidates first, then the grids
        ("eagle3", True),
        ("eagle3", True),
    ]


def test_an_older_release_and_no_production_say_so_in_the_plan() -> None:
    wire = {
        **WIRE,
        "engine": {"image": "vllm/vllm-openai:v0.20.0"},
        "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
        "production": None,
        "productionConcurrency": None,
    }
    plan = plan_of(SpecDecodeTuningSpec.model_validate(wire))
    assert not plan.with_schedule and plan.max_batch is None
    assert plan.production is None and plan.production_concurrency is None
    assert plan.loads == (1, 8, 64)


def test_the_trial_gates_are_the_figures_gates_at_the_tunings_block_count() -> None:
    assert set(TRIAL_GATES) == set(TuningFigure)
    for figure, gate in TRIAL_GATES.items():
        assert gate.type is tuning_type(figure) and gate.effective_min_samples == MIN_BLOCKS
    tail = TRIAL_GATES[TuningFigure.TAIL]
    assert tail.number("quantile") == TAIL_QUANTILE
    assert tail.choice("itl_definition", ItlDefinition) is ItlDefinition.PER_CHUNK
    assert TRIAL_GATES[TuningFigure.ALPHA].count("min_draft_tokens") == 1


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.33.0", "vllm/vllm-openai:v0.20.0"])
def test_the_report_goes_out_as_status_and_a_patch_the_wire_model_takes(image: str) -> None:
    wire = {**WIRE, "engine": {"image": image}, "gpuPool": {}}  # the simulation's one GPU
    base = Scenario("a100", "A100", "llama-3.1-8b", "chat", wire)
    sim = SimulatedTuning(base, base.tuning_spec(), random.Random(4))
    report = build_report(sim.finish())
    speculative = report.rollout_patch["spec"]["speculative"]  # type: ignore[index]
    if speculative is not None:  # the domain builds it; the wire model must take it unchanged
        assert SpeculativeConfig.model_validate(speculative).to_wire() == speculative
    assert ("num_speculative_tokens_per_batch_size" in (speculative or {})) == (
        report.schedule is not None and max(k for _, _, k in report.schedule) > 0
    )
    status = status_of(report, "t-report")
    assert SpecDecodeTuningStatus.model_validate(status.to_wire()) == status  # wire round trip
    assert status.phase is (TuningPhase.SUCCEEDED if report.done else TuningPhase.RUNNING)
    assert status.configs == len(sim.spec.configs()) and status.trials_run == report.looks
    assert [(w.min_concurrency, w.max_concurrency, w.config) for w in status.winners] == [
        (w.low, w.high, w.config) for w in report.winners
    ]
    assert status.schedule == (report.schedule or [])
    assert status.report_config_map == "t-report"
