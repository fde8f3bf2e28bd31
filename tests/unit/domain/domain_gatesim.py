"""Seeded simulation of a whole stage: synthetic observations, looked at every interval.

Used by the gate error-rate tests and by `benchmarks/gates.py`. It drives the domain's own
Analyzing step (`analyzing.analyze`) look by look, with cumulative observations of the
measuring window, until the stage decides (promote, roll back) or runs out of time.

Synthetic data, chosen to be harder than textbook i.i.d. data:
- Acceptance: each request draws its own per-position acceptance probability r from a Beta
  distribution (prompts differ in predictability, so drafts within a request are
  correlated); each draft's accepted length is a truncated geometric, P(L >= i) = r^i,
  i = 1..k. The Beta's mean is solved so that the population alpha (accepted / draft
  tokens) is exactly the target.
- Latency: inter-token latencies from a lognormal body plus a heavier lognormal tail
  (prefill interference, 5 %), drawn from one large seeded pool; the candidate's are
  scaled by the true ratio, so the true quantile ratio is exactly that ratio.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from specdecode.api import (
    AnalysisSpec,
    EngineSpec,
    GateSpec,
    ModelSpec,
    Phase,
    SpecDecodeRolloutSpec,
    SpecDecodeRolloutStatus,
    SpeculativeConfig,
    StageSpec,
)
from specdecode.api.speculative import fingerprint_of
from specdecode.domain.analyzing import analyze
from specdecode.domain.observations import (
    AcceptanceCounts,
    LatencySamples,
    Observations,
    StageObservations,
)
from specdecode.domain.stages import start_stage

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
K = 3
BETA_CONCENTRATION = 20.0  # a + b of the per-request Beta: sd of r ~ 0.1 (rho ~ 0.08)
WIDE_CONCENTRATION = 4.0  # sd of r ~ 0.2: a very mixed prompt set (rho ~ 0.3)
BODY_LOG_MEDIAN = math.log(0.030)  # 30 ms per token
TAIL_LOG_MEDIAN = math.log(0.060)  # 5 % of gaps: prefill interference


class Outcome(StrEnum):
    PROMOTED = "promoted"
    ROLLED_BACK = "rolled back"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class StageRun:
    outcome: Outcome
    samples: int  # draft tokens, or ITL samples per side, at the decision
    seconds: float  # measuring time at the decision


def single_stage_spec(gate: GateSpec, concurrency: int) -> SpecDecodeRolloutSpec:
    """One stage with the API's default durations (warm-up 30 s, 60-600 s, looks every 15 s)."""
    stage = StageSpec(name="stage", concurrency=concurrency, gates=[gate])
    return SpecDecodeRolloutSpec(
        model=ModelSpec(name="meta-llama/Llama-3.1-8B-Instruct"),
        engine=EngineSpec(image="vllm/vllm-openai:v0.11.2"),
        speculative=SpeculativeConfig(method="ngram", num_speculative_tokens=K),
        analysis=AnalysisSpec(stages=[stage]),
    )


def _alpha_of_beta_mean(mean: float, concentration: float) -> float:
    """Population alpha when r ~ Beta(mean * c, (1 - mean) * c): E[r + r^2 + r^3] / k."""
    a, b = mean * concentration, (1 - mean) * concentration
    moment, total = 1.0, 0.0
    for i in range(K):
        moment *= (a + i) / (a + b + i)  # E[r^(i+1)]
        total += moment
    return total / K


def beta_mean_for_alpha(alpha: float, concentration: float = BETA_CONCENTRATION) -> float:
    """Solve the Beta mean of r that gives this population alpha (bisection)."""
    low, high = 1e-6, 1 - 1e-6
    for _ in range(60):
        middle = (low + high) / 2
        below = _alpha_of_beta_mean(middle, concentration) < alpha
        low, high = (middle, high) if below else (low, middle)
    return (low + high) / 2


def _itl_pool(size: int, seed: int) -> tuple[float, ...]:
    """Inter-token latencies: a lognormal body (30 ms) and a heavier tail (5 %, 60 ms)."""
    rng = random.Random(seed)
    return tuple(
        math.exp(rng.gauss(TAIL_LOG_MEDIAN, 0.5))
        if rng.random() < 0.05
        else math.exp(rng.gauss(BODY_LOG_MEDIAN, 0.2))
        for _ in range(size)
    )


# Sampling from one large fixed pool is fast and keeps the true quantile ratio exact (the
# candidate draws from the same pool, scaled).
ITL_POOL = _itl_pool(200_000, seed=7)


class AcceptanceSource:
    """Candidate spec-decode counters, requests arriving at a steady rate."""

    def __init__(
        self,
        alpha: float,
        rng: random.Random,
        requests_per_second: float = 0.5,
        report_requests: bool = True,
        concentration: float = BETA_CONCENTRATION,
    ):
        self.concentration = concentration
        self.mean = beta_mean_for_alpha(alpha, concentration)
        self.rng = rng
        self.rate = requests_per_second
        self.report_requests = report_requests
        self.requests = 0
        self.drafts = 0
        self.per_position = [0] * K

    def advance(self, seconds: float) -> None:
        a = self.mean * self.concentration
        b = (1 - self.mean) * self.concentration
        for _ in range(round(seconds * self.rate)):
            r = self.rng.betavariate(a, b)
            drafts = self.rng.randint(40, 120)
            self.requests += 1
            self.drafts += drafts
            # L >= i iff u < r^i for one uniform u per draft (a truncated geometric).
            uniforms = sorted(self.rng.random() for _ in range(drafts))
            for i in range(K):
                self.per_position[i] += bisect_left(uniforms, r ** (i + 1))

    def observe(self) -> StageObservations:
        counts = AcceptanceCounts(
            drafts=self.drafts,
            draft_tokens=self.drafts * K,
            accepted_tokens=sum(self.per_position),
            per_position_accepted=tuple(self.per_position),
            requests=self.requests if self.report_requests else 0,
        )
        return StageObservations(stage_name="stage", candidate_acceptance=counts)


class LatencySource:
    """Per-token ITL samples of baseline and candidate (candidate = ratio x baseline)."""

    def __init__(self, ratio: float, rng: random.Random, samples_per_second: float = 10.0):
        self.ratio = ratio
        self.rng = rng
        self.rate = samples_per_second
        self.baseline: list[float] = []
        self.candidate: list[float] = []

    def advance(self, seconds: float) -> None:
        count = round(seconds * self.rate)
        self.baseline.extend(self.rng.choices(ITL_POOL, k=count))
        self.candidate.extend(self.ratio * x for x in self.rng.choices(ITL_POOL, k=count))

    def observe(self) -> StageObservations:
        return StageObservations(
            stage_name="stage",
            baseline_latency=LatencySamples.from_values(per_token_itl=tuple(self.baseline)),
            candidate_latency=LatencySamples.from_values(per_token_itl=tuple(self.candidate)),
        )


def run_stage(spec: SpecDecodeRolloutSpec, source: AcceptanceSource | LatencySource) -> StageRun:
    """Look every interval until the stage decides; the domain's Analyzing step judges."""
    stage_spec = spec.analysis.stages[0]
    start = _t(0)
    status = SpecDecodeRolloutStatus(
        phase=Phase.ANALYZING,
        phase_since=start,
        candidate_speculative=spec.speculative,
        candidate_fingerprint=fingerprint_of(spec.speculative),
        stages=[start_stage(stage_spec, start)],
        current_stage=stage_spec.name,
        current_stage_index=0,
    )
    interval = spec.analysis.interval_seconds
    measured = 0.0
    while True:
        step_seconds = 1.0 if measured == 0 else float(interval)
        measured += step_seconds
        source.advance(step_seconds)
        now = _t(stage_spec.warmup_seconds + measured)
        step = analyze(spec, status, Observations(generation=1, stage=source.observe()), now)
        status = step.status
        gate = status.stages[0].gates[0]
        samples = gate.samples or 0
        if status.phase is Phase.PROMOTING:
            return StageRun(Outcome.PROMOTED, samples, measured)
        if status.phase is Phase.ROLLED_BACK:
            outcome = Outcome.ROLLED_BACK if status.reason == "GateFailed" else Outcome.UNDECIDED
            return StageRun(outcome, samples, measured)


def _t(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)
