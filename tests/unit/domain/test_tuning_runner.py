"""The tuning runner's pure parts: a look measured by the gates, the round clock, and the
progress a restarted operator resumes from."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
import yaml
from domain_fixtures import blocked_samples

from localcluster.manifests import REPO
from specdecode.api.tuning import SpecDecodeTuningSpec
from specdecode.domain.observations import LatencySamples, MetricError
from specdecode.domain.stats import Interval
from specdecode.domain.tuning import rounds
from specdecode.domain.tuning.cells import CellKey, CellMeasurement
from specdecode.domain.tuning.measure import TrialWindow, look_error, measure_cell
from specdecode.domain.tuning.model import Candidate, Limits, Pace, TuningPlan
from specdecode.domain.tuning.progress import Progress, from_json, to_json
from specdecode.domain.tuning.run import TuningRun
from specdecode.reconciler.tuning_boundary import TRIAL_GATES, plan_of

pytestmark = pytest.mark.unit

SUFFIX = Candidate(
    "suffix-8", "suffix", 8, False, {"method": "suffix", "num_speculative_tokens": 8}
)
NGRAM = Candidate(
    "ngram-3",
    "ngram",
    3,
    False,
    {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
)
PLAN = TuningPlan(
    candidates=(SUFFIX, NGRAM),
    loads=(4, 16),
    objective="MinimiseTPOT",
    limits=Limits(tail_ratio_at_most=1.4, error_rate_at_most=0.02, alpha_at_least=None),
    pace=Pace(warmup_seconds=10, look_seconds=20, max_seconds=60, tie_within=0.05, error=0.05),
    pairs_at_once=2,
    gpu_seconds_budget=200_000,
    gpus_per_replica=1,
    gates=TRIAL_GATES,
    with_schedule=True,
)


def side(tpot: float, itl: float, seed: int, blocks: int = 40) -> LatencySamples:
    """One side's window: lognormal chunk gaps and TPOTs dealt into 2-second blocks."""
    rng = random.Random(seed)
    failed = 0
    return blocked_samples(
        itl=[itl * rng.lognormvariate(0, 0.3) for _ in range(16000)],
        time_per_output_token=[tpot * rng.lognormvariate(0, 0.1) for _ in range(400)],
        blocks=blocks,
        requests_ok=400 - failed,
        requests_failed=failed,
    )


def test_a_look_is_measured_by_the_gates_at_the_cells_error() -> None:
    window = TrialWindow(side(0.020, 0.020, 1), side(0.012, 0.030, 2))
    measured = measure_cell(window, 2.5, SUFFIX, TRIAL_GATES)
    assert isinstance(measured, CellMeasurement)
    assert measured.tpot_speedup.lower > 1.4 and measured.tpot_speedup.upper < 1.9
    assert measured.tail_ratio.lower > 1.2  # the candidate's chunk gap is 1.5x
    assert measured.objective == measured.tpot_speedup == measured.throughput_ratio
    wider = measure_cell(window, 3.5, SUFFIX, TRIAL_GATES)
    assert isinstance(wider, CellMeasurement)
    assert wider.tpot_speedup.lower < measured.tpot_speedup.lower  # a larger z is wider
    assert look_error(2.5) == pytest.approx(0.00621, abs=1e-4)


def test_a_tail_without_enough_blocks_is_a_point_estimate_not_yet_confirmed() -> None:
    """The TailLatency gate bounds a P99 only over 30 blocks holding P99 samples."""
    window = TrialWindow(side(0.020, 0.020, 1, blocks=10), side(0.012, 0.030, 2, blocks=10))
    measured = measure_cell(window, 2.5, SUFFIX, TRIAL_GATES)
    assert isinstance(measured, CellMeasurement)
    assert measured.tail_ratio.upper == math.inf and measured.tail_ratio.lower == 0.0
    assert 1.3 < measured.tail_ratio.value < 1.7
    assert measured.tpot_speedup.lower > 1.3  # the median needs no tail blocks


def test_a_look_without_data_or_with_a_failed_source_is_not_measured() -> None:
    assert "speedup" in str(measure_cell(TrialWindow(None, None), 2.5, SUFFIX, TRIAL_GATES))
    broken = TrialWindow(MetricError("shadow-load pods", "down"), side(0.01, 0.01, 3))
    assert isinstance(measure_cell(broken, 2.5, SUFFIX, TRIAL_GATES), str)


def test_rounds_charge_looks_wait_for_engines_and_carry_running_cells_over() -> None:
    progress = Progress(TuningRun.start(PLAN))
    first = rounds.start_round(progress, now=0.0)
    assert not first.done and len(progress.round) == 2  # two slots, breadth first
    assert rounds.next_wake(progress, 0.0) is None  # engines starting: events, not time
    key = next(iter(progress.round))
    rounds.engines_ready(progress, key, now=5.0)
    assert rounds.next_wake(progress, 5.0) == pytest.approx(30.0)  # 10 s warm-up + 20 s
    assert rounds.due(progress, 34.9) == [] and rounds.due(progress, 35.0) == [key]
    rounds.record(progress, key, "speedup: 3 blocks", now=35.0)  # too early: asked again
    assert not progress.round[key].recorded
    assert rounds.next_wake(progress, 35.0) == rounds.RETRY_SECONDS
    rounds.record(progress, key, "speedup: 3 blocks", now=55.0)  # a look period later
    assert progress.round[key].recorded and "not measured" in progress.run.cells[key].notes[0]


def test_a_cell_in_consecutive_rounds_keeps_its_window_and_others_are_stopped() -> None:
    progress = Progress(TuningRun.start(PLAN))
    rounds.start_round(progress, 0.0)
    measurement = CellMeasurement(*(Interval(1.5, 1.2, 1.8, 10),) * 4, Interval(0.0, 0.0, 0.01, 10))
    for key in progress.round:
        rounds.engines_ready(progress, key, 0.0)
        rounds.record(progress, key, measurement, 30.0)
    before = dict(progress.round)
    second = rounds.start_round(progress, 30.0)
    for key, cell in progress.round.items():
        if key in before:  # continued: same window, 20 s further on, no new warm-up
            assert cell.measure_from == before[key].measure_from
            assert cell.run_seconds == 20.0
        else:
            assert cell.load_from is None
    assert set(second.stopped) == set(before) - set(progress.round)


def test_progress_survives_a_restart_and_a_changed_space_starts_afresh() -> None:
    progress = Progress(TuningRun.start(PLAN))
    rounds.start_round(progress, 0.0)
    key = next(iter(progress.round))
    rounds.engines_ready(progress, key, 1.0)
    progress.run.record(
        key,
        CellMeasurement(
            *(Interval(1.5, 1.2, float("inf"), 10),) * 4,
            Interval(0.0, 0.0, 0.01, 10),
            accepted_length=Interval(1.6, 1.5, 1.7, 40),
        ),
    )
    restored = from_json(PLAN, to_json(progress))
    assert restored is not None and to_json(restored) == to_json(progress)
    assert restored.run.cells[key].measurement == progress.run.cells[key].measurement
    other = dataclasses.replace(PLAN, loads=(8, 32))
    assert from_json(other, to_json(progress)) is None
    assert from_json(PLAN, "{not json") is None and from_json(PLAN, None) is None


def test_every_cell_key_of_the_round_names_a_configured_cell() -> None:
    progress = Progress(TuningRun.start(PLAN))
    rounds.start_round(progress, 0.0)
    fingerprints = {c.fingerprint for c in PLAN.candidates}
    assert all(isinstance(k, CellKey) and k.config in fingerprints for k in progress.round)


def test_the_tuning_example_is_a_valid_spec_with_a_trial_per_cell() -> None:
    """examples/simulator/specdecode-tuning.yaml parses, and every cell's trial renders
    a valid rollout spec (what the runner builds its engines and load pods from)."""

    document = yaml.safe_load((REPO / "examples/simulator/specdecode-tuning.yaml").read_text())
    spec = SpecDecodeTuningSpec.model_validate(document["spec"])
    for config in spec.configs():
        trial = spec.trial_spec(config)
        assert trial.speculative == config
        assert trial.analysis.traffic == spec.traffic


def test_a_look_window_ends_at_its_due_time_and_resumed_cells_are_told_apart() -> None:
    progress = Progress(TuningRun.start(PLAN))
    rounds.start_round(progress, 0.0)
    key = next(iter(progress.round))
    rounds.engines_ready(progress, key, now=5.0)  # due at 5 + 10 + 20 = 35
    assert rounds.window_end(progress, key, 30.0) == 30.0
    assert rounds.window_end(progress, key, 90.0) == 35.0  # a waiting round adds nothing
    assert not rounds.resumed(progress, key)
    progress.run.cells[key].seconds += 20.0  # as if an earlier run had measured a look
    assert rounds.resumed(progress, key)


def test_the_plan_is_what_the_boundary_makes_of_its_spec() -> None:
    """The runner's tests judge the plan a user's spec becomes, not a made-up one."""
    spec = SpecDecodeTuningSpec.model_validate(
        {
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "engine": {"image": "vllm/vllm-openai:v0.33.0"},
            "searchSpace": {
                "candidates": [
                    {"method": "suffix", "num_speculative_tokens": 8},
                    {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
                ]
            },
            "concurrencyLadder": [4, 16],
            "trial": {"warmupSeconds": 10, "lookSeconds": 20, "maxSeconds": 60},
            "budget": {"maxParallelTrials": 2},
        }
    )
    made = plan_of(spec)
    assert dataclasses.replace(made, candidates=PLAN.candidates) == PLAN
    assert [c.wire for c in made.candidates] == [c.wire for c in PLAN.candidates]
