"""Issue 5, end to end: automated gates decide, on shadow traffic through simulated engines.

Given rollouts whose simulated engines have a known acceptance and hardware shape, when the
operator's load pods drive identical shadow traffic through baseline and candidate, then it
promotes or rolls back for the right reason, with the measured numbers in status. The
simulated engines run at real time: the load pods time every chunk in their own processes
and say when they could not keep up, so no slowed world is needed for an honest verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from localcluster.handle import LocalCluster
from localcluster.manifests import load_example, merged
from localcluster.rollouts import Rollout

pytestmark = pytest.mark.e2e

EAGLE3 = {
    "method": "eagle3",
    "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "num_speculative_tokens": 3,
}


def sim_env(acceptance: float, gpu: str = "L40S") -> list[dict[str, str]]:
    """Engines simulated on an L40S: its steps (20-70 ms) are long enough that this 2-core
    machine's load clients keep their timestamp delay under 5 % of the judged P99, which a
    look checks (H100 steps of ~8 ms at 32 streams saturate the machine: Inconclusive)."""
    return [
        {"name": "SPECDECODE_SIM_GPU", "value": gpu},
        {"name": "SPECDECODE_SIM_ACCEPTANCE", "value": str(acceptance)},
    ]


def stage(name: str, concurrency: int, gate: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "concurrency": concurrency,
        "warmupSeconds": 5,
        "minDurationSeconds": 20,  # above the example's 15 s request timeout
        "maxDurationSeconds": 180,
        "gates": [gate],
    }


ACCEPTANCE_GATE = {"name": "alpha", "type": "Acceptance", "minAlpha": 0.55}


def latency_gate(tolerance: float, definition: str) -> dict[str, Any]:
    return {
        "name": "p99-itl",
        "type": "TailLatency",
        "quantile": 0.99,
        "tolerance": tolerance,
        "itlDefinition": definition,
    }


def gated_rollout(
    acceptance: float,
    production_concurrency: int = 32,
    tolerance: float = 0.5,
    definition: str = "PerChunk",
    **spec: Any,
) -> dict[str, Any]:
    """The simulator example with automated gates and the given engine behaviour."""
    patch = {
        "spec": {
            "engine": {"env": sim_env(acceptance)},
            "analysis": {
                "intervalSeconds": 3,
                "progressDeadlineSeconds": 180,
                "stages": [
                    stage("acceptance", 4, ACCEPTANCE_GATE),
                    stage(
                        "tail-latency",
                        production_concurrency,
                        latency_gate(tolerance, definition),
                    ),
                ],
            },
            **spec,
        }
    }
    manifest: dict[str, Any] = merged(load_example(), patch)
    return manifest


def gate(status: dict[str, Any], stage_name: str, gate_name: str) -> dict[str, Any]:
    stage_status = next(s for s in status["stages"] if s["name"] == stage_name)
    return next(g for g in stage_status["gates"] if g["name"] == gate_name)


def degraded(status: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == "Degraded")


# A config that pays promoted, and weak heads rolled back by the alpha gate, with the
# default stages: tests/e2e/test_verdicts.py.


# The P99 per-token gap at 64 streams is CPU-bound timing: beside another worker's analysis
# the shadow load saturated (a two-worker rehearsal). `make test` runs it alone.
@pytest.mark.cpu_exclusive
def test_compute_bound_production_concurrency_is_rolled_back_by_tail_latency(
    rollout: Callable[[str], Rollout],
) -> None:
    """Good acceptance, but at concurrency 64 a 70B model on 4 L40S is compute-heavy: the
    verify of k+1 tokens per sequence adds its compute to every step (the L40S overlaps
    none of it), so a step whose drafts are all rejected, the P99 per-token gap, is ~1.4x
    a plain step: a 10 % per-token tolerance rolls it back.

    The tail stage may run 360 s: only 40-50 % of the 2 s blocks hold the baseline's P99
    steps, so the gate's 30 tail blocks took 57, 76 and 78 blocks (114-156 s) in three
    runs on this machine, and a CI run with the stage's end at 180 s ended Inconclusive
    (rolled back, fail-closed, but not by the evidence this test is about)."""
    r = rollout("llama70b")
    manifest = gated_rollout(
        acceptance=0.85,
        production_concurrency=64,
        tolerance=0.10,
        definition="PerToken",
        model={
            "name": "meta-llama/Llama-3.3-70B-Instruct",
            "servedModelName": "llama-3.3-70b-instruct",
        },
        gpuPool={
            "gpuProduct": "NVIDIA-H100-80GB-HBM3",
            "gpusPerReplica": 4,
            "tensorParallelSize": 4,
        },
        speculative={**EAGLE3, "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"},
    )
    manifest["spec"]["analysis"]["stages"][1]["maxDurationSeconds"] = 360
    r.apply(manifest)
    status = r.wait_phase(("Promoted", "RolledBack", "Failed"), timeout=540)
    assert status["phase"] == "RolledBack", r.describe()
    assert gate(status, "acceptance", "alpha")["verdict"] == "Successful"
    itl = gate(status, "tail-latency", "p99-itl")
    assert itl["verdict"] == "Failed" and itl["lowerBound"] > 1.10, r.describe()
    assert "tail-latency/p99-itl" in status["message"]


def test_prometheus_outage_is_never_a_promotion(
    rollout: Callable[[str], Rollout], cluster: LocalCluster
) -> None:
    r = rollout("llama")
    manifest = gated_rollout(acceptance=0.85)
    manifest["spec"]["analysis"]["consecutiveErrorLimit"] = 2
    # The stage must still be running when Prometheus stops (it could decide after 20 s).
    manifest["spec"]["analysis"]["stages"][0]["minDurationSeconds"] = 120
    r.apply(manifest)
    r.wait(
        lambda s: s.get("currentStage") == "acceptance",
        timeout=180,
        message="the acceptance stage running",
    )
    cluster.stop_prometheus()
    try:
        status = r.wait_phase(("Promoted", "RolledBack", "Failed"), timeout=180)
    finally:
        cluster.start_prometheus()
    assert status["phase"] == "RolledBack", r.describe()
    assert degraded(status)["reason"] == "MetricsUnavailable"
    alpha = gate(status, "acceptance", "alpha")
    assert alpha["verdict"] == "Error" and alpha["consecutiveErrors"] > 2


def test_a_candidate_that_crashes_is_rolled_back(rollout: Callable[[str], Rollout]) -> None:
    """vLLM refuses EAGLE-3 on a Mistral target at start: the candidate crash-loops."""
    r = rollout("mistral")
    r.apply(
        gated_rollout(
            acceptance=0.85,
            model={"name": "mistralai/Mistral-7B-Instruct-v0.3", "servedModelName": "mistral-7b"},
        )
    )
    status = r.wait_phase(("Promoted", "RolledBack", "Failed"), timeout=240)
    assert status["phase"] == "RolledBack", r.describe()
    assert degraded(status)["reason"] == "CandidateCrashed"
    assert "Eagle3 is only supported for" in status["message"]


# 64 streams a side, judged on their P99 chunk gap: CPU-bound timing, run alone.
@pytest.mark.cpu_exclusive
@pytest.mark.timeout(1500)
def test_an_a_a_pair_at_concurrency_64_passes_its_tail_latency_gate(
    rollout: Callable[[str], Rollout],
) -> None:
    """The instrument's own control: a candidate whose engine decodes exactly as the
    baseline (the simulator validates the EAGLE-3 config, then ignores it) must pass a
    P99 chunk-gap gate at production concurrency, on engines and clients at real time.
    GB10-profile engines (80 ms steps) keep 64 streams per side within this machine.

    Answers of at most 48 tokens: the 64 streams run nearly in step, so the P99 gaps (the
    steps that prefill the next requests) fall in one 2-second block per wave of requests,
    and the gate needs 30 such blocks. At 128 tokens a wave took ~13 s and 300 s held 28
    (Inconclusive, CI of stop 28); at 48 a wave takes ~5 s.

    The default tolerance (0.4): each side's P99 then falls among the prefill steps, whose
    length varies by wave, so at 0.25 two CI runs decided after 150 s (0.896 [0.585,
    1.010]) and after 570 s, 30 s before the stage's end (0.990 [0.797, 1.243])."""
    r = rollout("llama")
    manifest = gated_rollout(acceptance=0.85, production_concurrency=64, tolerance=0.4)
    manifest["spec"]["analysis"]["traffic"]["maxTokens"] = 48
    aa_env = [
        {"name": "SPECDECODE_SIM_GPU", "value": "GB10"},
        {"name": "SPECDECODE_SIM_IGNORE_SPECULATIVE", "value": "1"},
    ]
    manifest["spec"]["engine"]["env"] = aa_env
    tail = manifest["spec"]["analysis"]["stages"][1]
    # Room to spare: the gate decides as soon as it has its blocks (session 11 saw one run
    # still undecided at 600 s, 1.020 [0.686, 1.442] over 298 blocks).
    manifest["spec"]["analysis"]["stages"] = [{**tail, "maxDurationSeconds": 900}]
    manifest["spec"]["analysis"]["progressDeadlineSeconds"] = 300
    r.apply(manifest)
    status = r.wait_phase(("Promoted", "RolledBack", "Failed"), timeout=1200)
    assert status["phase"] == "Promoted", r.describe()
    itl = gate(status, "tail-latency", "p99-itl")
    assert itl["verdict"] == "Successful" and itl["upperBound"] <= itl["threshold"] == 1.4
    # The instrument is unbiased: the bound covers the truth, 1. (The point estimate is
    # not held to +-10 %: each side's P99 falls among the steps that prefill a wave, whose
    # length varies by wave; a CI run measured 0.896 [0.585, 1.010].)
    assert itl["lowerBound"] <= 1.0 <= itl["upperBound"], itl
