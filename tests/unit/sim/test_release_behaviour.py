"""The simulator follows the release in SPECDECODE_VLLM_VERSION: its version, its metric
names, the fields added after 0.11 (per-batch-size schedule, synthetic acceptance,
draft_model) and the A/A knob SPECDECODE_SIM_IGNORE_SPECULATIVE. In-process, fake time."""

from __future__ import annotations

import json
import subprocess

import httpx
import pytest
from simtesting import (
    EAGLE3_8B,
    LLAMA_8B,
    make_core,
    make_request,
    run,
    running_simulator,
    sim_command,
    sim_env,
    spec_totals,
)

from specdecode_sim.acceptance import (
    expected_tokens_for_curve,
    rates_for_mean_length,
    synthetic_conditional,
)
from specdecode_sim.cli import main
from specdecode_sim.cliargs import parse_cli
from specdecode_sim.engine import EngineCore, SpecPlan
from specdecode_sim.metrics import EngineMetrics
from specdecode_sim.releases import parse_release
from specdecode_sim.settings import load_settings
from specdecode_sim.startup import EnginePlan, build_plan

pytestmark = pytest.mark.unit

TPOT = "vllm:time_per_output_token_seconds"


def _plan(config: dict[str, object] | None, **env: str) -> EnginePlan:
    argv = ["serve", LLAMA_8B, "--max-model-len", "8192"]
    if config is not None:
        argv += ["--speculative-config", json.dumps(config)]
    return build_plan(parse_cli(argv), load_settings(env))


@pytest.mark.parametrize(("selected", "printed"), [(None, "0.33.0"), ("0.20.1", "0.20.1")])
def test_vllm_version_prints_the_selected_release(selected: str | None, printed: str) -> None:
    extra = {"SPECDECODE_VLLM_VERSION": selected} if selected else {}
    done = subprocess.run(
        sim_command("--version"),
        env=sim_env(**extra),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == printed


@pytest.mark.parametrize("version", ["0.10.2", "0.34.0", "banana"])
def test_unsupported_release_exits_at_start(
    version: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SPECDECODE_VLLM_VERSION", version)
    assert main(["serve", LLAMA_8B]) == 1
    err = capsys.readouterr().err
    assert (
        f"SPECDECODE_VLLM_VERSION={version}" in err.replace("'", "") and "0.11.2 to 0.33.x" in err
    )


def test_served_version_and_start_up_log_name_the_release() -> None:
    env = sim_env(SPECDECODE_VLLM_VERSION="0.24.3", SPECDECODE_SIM_TIME_SCALE="0.05")
    with running_simulator(LLAMA_8B, "--speculative-config", EAGLE3_8B, env=env) as sim:
        assert httpx.get(f"{sim.base_url}/version").json() == {"version": "0.24.3"}
        metrics = httpx.get(f"{sim.base_url}/metrics").text
    assert TPOT not in metrics and "specdecode_sim_speculative_tokens_in_use" in metrics
    assert "imitating vLLM 0.24.3" in sim.stderr_text()


@pytest.mark.parametrize(
    ("version", "exported"),
    [("0.11.2", True), ("0.14.1", True), ("0.15.0", False), ("0.33.0", False)],
)
def test_time_per_output_token_metric_until_0_14(version: str, exported: bool) -> None:
    metrics = EngineMetrics("m", 4096, 3, parse_release(version))
    text = metrics.exposition().decode()
    assert (TPOT in text) is exported
    assert "vllm:inter_token_latency_seconds" in text


SCHEDULE = ((1, 2, 3), (3, 8, 1), (9, 64, 0))


@pytest.mark.parametrize(("batch", "k"), [(1, 3), (2, 3), (3, 1), (8, 1), (9, 0), (64, 0)])
def test_k_follows_the_running_batch_size(batch: int, k: int) -> None:
    core = make_core(SpecPlan("eagle3", 3, schedule=SCHEDULE), acceptance=0.5)
    for index in range(batch):
        core.add(make_request(core, index, "hello world", max_tokens=40))
    reports = [core.step(0.0)]  # prefill: all admitted, proposals made for this batch
    reports += [core.step(reports[-1].ended) for _ in range(3)]  # type: ignore[union-attr]
    assert all(r is not None and r.speculative_tokens_in_use == k for r in reports)
    drafts, draft_tokens, _, _ = spec_totals([r for r in reports if r is not None])
    assert draft_tokens == drafts * k and (drafts > 0) is (k > 0)


def test_k_gauge_changes_with_load() -> None:
    core = make_core(SpecPlan("eagle3", 3, schedule=SCHEDULE), acceptance=0.5)
    metrics = EngineMetrics("m", 8192, 3)
    gauge = []
    core.add(make_request(core, 0, "hello world", max_tokens=400))
    now = 0.0
    for step in range(60):
        if step == 20:  # load rises to 10 running requests
            for index in range(1, 10):
                core.add(make_request(core, index, "hello world", max_tokens=30))
        report = core.step(now)
        assert report is not None
        metrics.record_step(report)
        now = report.ended
        text = metrics.exposition().decode()
        line = next(x for x in text.splitlines() if x.startswith("specdecode_sim_speculative"))
        gauge.append(float(line.rsplit(" ", 1)[1]))
    assert gauge[5] == 3.0 and gauge[25] == 0.0 and gauge[-1] == 3.0  # load gone again


def test_a_zero_k_step_costs_what_a_plain_step_costs() -> None:
    plain, scheduled = make_core(), make_core(SpecPlan("eagle3", 3, schedule=((1, 64, 0),)))
    for core in (plain, scheduled):
        for index in range(4):
            core.add(make_request(core, index, "hello world", max_tokens=50))
    assert [r.duration for r in run(plain)] == [r.duration for r in run(scheduled)]


def test_synthetic_rates_set_per_position_acceptance() -> None:
    rates = (0.8, 0.6, 0.4)
    core = make_core(SpecPlan("eagle3", 3, synthetic_rates=rates), acceptance=0.95)
    for index in range(8):
        core.add(make_request(core, index, "hello world", max_tokens=1500))
    drafts, _, _, per_position = spec_totals(run(core))
    measured = [count / drafts for count in per_position]
    assert drafts > 2000
    assert all(abs(m - r) < 0.03 for m, r in zip(measured, rates, strict=True)), measured


def test_synthetic_length_sets_mean_tokens_per_step() -> None:
    rates = rates_for_mean_length(2.5, 3)
    assert expected_tokens_for_curve(synthetic_conditional(rates, 3)) == pytest.approx(2.5)
    core = make_core(SpecPlan("mtp", 3, synthetic_rates=rates), acceptance=0.95)
    for index in range(8):
        core.add(make_request(core, index, "hello world", max_tokens=1500))
    drafts, _, accepted, _ = spec_totals(run(core))
    assert 1 + accepted / drafts == pytest.approx(2.5, abs=0.05)


def test_synthetic_config_reaches_the_engine() -> None:
    config = {"method": "mtp", "num_speculative_tokens": 2, "rejection_sample_method":
              "synthetic", "synthetic_acceptance_rates": [0.7, 0.3]}  # fmt: skip
    plan = _plan(config, SPECDECODE_VLLM_VERSION="0.20.0")
    assert plan.engine.spec is not None and plan.engine.spec.synthetic_rates == (0.7, 0.3)


def test_draft_model_runs_from_0_15() -> None:
    config = {"model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4}
    spec = _plan(config, SPECDECODE_VLLM_VERSION="0.15.0").engine.spec
    assert spec is not None and spec.method == "draft_model"
    core = make_core(spec, acceptance=0.6)
    core.add(make_request(core, 0, "hello world", max_tokens=100))
    drafts, draft_tokens, _, _ = spec_totals(run(core))
    assert drafts > 0 and draft_tokens == 4 * drafts


def test_draft_model_exits_before_0_15(capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("SPECDECODE_VLLM_VERSION", "0.14.1")
    config = {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct",
              "num_speculative_tokens": 4}  # fmt: skip
    assert main(["serve", LLAMA_8B, "--speculative-config", json.dumps(config)]) == 1
    assert "NotImplementedError: Draft model speculative decoding is not supported yet" in (
        capsys.readouterr().err
    )


def test_ignore_speculative_validates_then_decodes_plainly() -> None:
    eagle3 = json.loads(EAGLE3_8B)
    ignored = _plan(eagle3, SPECDECODE_SIM_IGNORE_SPECULATIVE="1")
    assert ignored.engine.spec is None
    assert _plan(eagle3).engine.spec is not None  # control: the knob is what removes it
    plain = _plan(None)
    reports = []
    for plan in (plain, ignored):
        core = EngineCore(plan.engine)
        for index in range(6):
            core.add(make_request(core, index, "hello world", max_tokens=80))
        reports.append([(r.duration, r.generation_tokens, r.spec) for r in run(core)])
    assert reports[0] == reports[1]


def test_ignore_speculative_still_refuses_a_bad_config(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SPECDECODE_SIM_IGNORE_SPECULATIVE", "1")
    bad = json.dumps({"method": "eagle3", "num_speculative_tokens": 3})
    assert main(["serve", LLAMA_8B, "--speculative-config", bad]) == 1
    assert "without speculative model" in capsys.readouterr().err


@pytest.mark.parametrize(
    "config",
    [
        {"method": "ngram_gpu", "num_speculative_tokens": 3},
        {"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 4},
        {"method": "dspark", "num_speculative_tokens": 4},
    ],
    ids=lambda config: str(config["method"]),
)
def test_newer_methods_start_and_draft(config: dict[str, object]) -> None:
    spec = _plan(config, SPECDECODE_VLLM_VERSION="0.25.0").engine.spec
    assert spec is not None
    core = make_core(spec, acceptance=0.6)
    core.add(make_request(core, 0, "the cat sat on the mat " * 20, max_tokens=100))
    reports = run(core)
    drafts, _, _, _ = spec_totals(reports)
    assert drafts > 0 and all(report.duration > 0 for report in reports)
