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
- Latency: engine-step durations from a lognormal body plus a heavier lognormal tail
  (prefill interference, 5 %), drawn from one large seeded pool; the candidate's are
  scaled by the true ratio, so the true quantile ratio is exactly that ratio. Every
  request of a batch records the same step (with its own jitter), in 2-second blocks, as
  the load pods report them (`LatencySource`).
- Dependence between steps (`ar1`, `waves`): step times as an AR(1) series instead of
  i.i.d. draws, and closed-loop prefill waves (requests that start together prefill
  together, so the long steps come in a rhythm); see `DependentSteps`.
- Acceptance also reaches the load pods: per request, its decode steps and accepted
  tokens (`AcceptedMoments`), unless `stream=False` (Mirror traffic).
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import lru_cache

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import (
    AnalysisSpec,
    EngineSpec,
    GateSpec,
    ModelSpec,
    Phase,
    SpecDecodeRolloutSpec,
    SpeculativeConfig,
    StageSpec,
)
from specdecode.api.speculative import fingerprint_of
from specdecode.domain.analyzing import analyze
from specdecode.domain.observations import (
    AcceptanceCounts,
    AcceptedMoments,
    LatencyBlock,
    LatencySamples,
    Observations,
    StageObservations,
)
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.sketch import GAMMA, Sketch
from specdecode.domain.stages import start_stage
from specdecode.reconciler.analysis_boundary import plan_of
from specdecode.reconciler.rollout_boundary import settings_of

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
K = 3
BETA_CONCENTRATION = 20.0  # a + b of the per-request Beta: sd of r ~ 0.1 (rho ~ 0.08)
WIDE_CONCENTRATION = 4.0  # sd of r ~ 0.2: a very mixed prompt set (rho ~ 0.3)
BODY_LOG_MEDIAN = math.log(0.030)  # 30 ms per token
TAIL_LOG_MEDIAN = math.log(0.060)  # 5 % of gaps: prefill interference
BLOCK_SECONDS = 2
LOG_GAMMA = math.log(GAMMA)
# Lag-1 autocorrelation of log step time in the simulator's own step trace, measured by
# `benchmarks/step_trace.py` (engine core in-process, simulated time, closed loop at 32
# streams, chat/code prompts, max_tokens 256, 1,200 requests, steps after a 10 s warm-up):
# 8B L40S chat plain -0.011 (9,357 steps), EAGLE-3 -0.004 (5,329), code suffix +0.050
# (5,777), 70B 2x H200 EAGLE-3 -0.040 (5,013); standard error ~0.013, and at 1 s and 2 s
# lags within +-0.04. The simulator's steps are as good as independent; the figure used is
# the largest measured (a 400-request trace gave -0.05 to +0.036, and the benchmark's
# "AR measured" rows ran at 0.036), and the benchmark adds stress rows far above it. The
# same trace shows no prefill waves (1.1 first tokens per prefill step: prompt and response
# lengths differ, so closed-loop requests drift apart); `waves` is a stress model.
STEP_AR1 = 0.05
# Closed-loop requests of 256 tokens at one token per step: a cohort that started together
# restarts (and prefills) together every ~256 steps (~8 s, ~4 blocks at 31 steps/s).
REQUEST_STEPS = 256


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


def _itl_pool(size: int, seed: int, tail_sigma: float = 0.5) -> tuple[float, ...]:
    """Inter-token latencies: a lognormal body (30 ms) and a heavier tail (5 %, 60 ms)."""
    rng = random.Random(seed)
    return tuple(
        math.exp(rng.gauss(TAIL_LOG_MEDIAN, tail_sigma))
        if rng.random() < 0.05
        else math.exp(rng.gauss(BODY_LOG_MEDIAN, 0.2))
        for _ in range(size)
    )


def busy_steps_per_second(tail_sigma: float = 0.5) -> int:
    """Steps a continuously busy engine takes per second: 1 / the pool's mean step time.

    Why: a closed-loop load at concurrency b keeps every one of b requests in every decode
    step, so the engine never idles; simulating fewer steps per second than this leaves
    the engine idle most of the time, which no real stage at that concurrency does.
    """
    pool = ITL_POOL if tail_sigma == 0.5 else _itl_pool(50_000, 8, tail_sigma)
    return round(len(pool) / sum(pool))


@lru_cache(maxsize=8)
def _request_pool(jitter: float, max_tokens: int) -> tuple[tuple[float, float, int], ...]:
    """Per-request draws in bucket units: (jitter, jitter - log tokens, tokens), seeded."""
    rng = random.Random(9)
    draws = []
    for _ in range(1 << 17):
        log_jitter = rng.gauss(0, jitter) if jitter else 0.0
        tokens = rng.randint(1, max_tokens) if max_tokens > 1 else 1
        chunk_offset = log_jitter / LOG_GAMMA - 1e-12
        draws.append((chunk_offset, (log_jitter - math.log(tokens)) / LOG_GAMMA - 1e-12, tokens))
    return tuple(draws)


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
        stream: bool = True,
    ):
        self.stream = stream
        self.moments = AcceptedMoments()
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
            accepted = 0
            for i in range(K):
                at_least = bisect_left(uniforms, r ** (i + 1))
                self.per_position[i] += at_least
                accepted += at_least
            # What the load pods see: one chunk per step, accepted tokens beyond one each.
            self.moments = self.moments.plus(AcceptedMoments.of([(drafts, accepted)]))

    def observe(self) -> StageObservations:
        counts = AcceptanceCounts(
            drafts=self.drafts,
            draft_tokens=self.drafts * K,
            accepted_tokens=sum(self.per_position),
            per_position_accepted=tuple(self.per_position),
            requests=self.requests if self.report_requests else 0,
        )
        streamed = None
        if self.stream:
            block = LatencyBlock(start=0.0, seconds=0.0, accepted=self.moments)
            streamed = LatencySamples(blocks=(block,), shards=1)
        return StageObservations(
            stage_name="stage", candidate_acceptance=counts, candidate_latency=streamed
        )


class DependentSteps:
    """One engine's step times with dependence: an AR(1) latent and prefill waves.

    The latent z_t = ar1 z_(t-1) + sqrt(1 - ar1^2) e_t is standard normal at every step;
    the step time is the pool's quantile at Phi(z_t) (a Gaussian copula), so the marginal
    law stays the pool's and the candidate's quantile ratio stays exactly `ratio`. With
    `waves` cohorts, each cohort's requests restart together every ~REQUEST_STEPS steps
    (+-10 %, lengths differ a little; a random phase each): that step prefills the cohort,
    and its time comes from the pool's top 5 % (the prefill-interference tail).
    """

    def __init__(self, pool: tuple[float, ...], rng: random.Random, ar1: float, waves: int):
        self.pool = sorted(pool)
        self.rng = rng
        self.ar1 = ar1
        self.shock = math.sqrt(1.0 - ar1 * ar1)
        self.z = rng.gauss(0.0, 1.0)
        self.t = 0
        self.restarts = [rng.randrange(REQUEST_STEPS) for _ in range(waves)]

    def take(self, count: int) -> list[float]:
        """The next `count` step times."""
        rng, pool, size, out = self.rng, self.pool, len(self.pool), []
        for _ in range(count):
            self.z = self.ar1 * self.z + self.shock * rng.gauss(0.0, 1.0)
            u = 0.5 * (1.0 + math.erf(self.z / math.sqrt(2.0)))
            for cohort, at in enumerate(self.restarts):
                if at <= self.t:
                    u = 0.95 + 0.05 * rng.random()
                    self.restarts[cohort] = self.t + round(REQUEST_STEPS * rng.uniform(0.9, 1.1))
            out.append(pool[min(size - 1, int(u * size))])
            self.t += 1
        return out


class LatencySource:
    """Both engines' ITL in 2-second blocks, as the load pods report them.

    Each engine takes `steps_per_second` steps (default: `samples_per_second / batch`; a
    busy engine takes 1 / mean step time, `busy_steps_per_second`); a step's duration comes
    from ITL_POOL (the candidate's scaled by `ratio`, and both by `drift`(t) if given) and is
    recorded once per request of the batch (`batch` chunks that share it: dependent
    samples), each with its own multiplicative jitter (log-sd `jitter`). Each chunk carries
    1..`max_tokens` tokens (the same law on both sides), so the per-token ITL is gap / tokens
    weighted by tokens; the true ratio of both ITL quantiles is exactly `ratio`. Each block
    also holds one TPOT per request that ended in it (the block's mean step time, jittered
    5 %). A request's jitter and tokens come from a fixed seeded pool (`_request_pool`), a
    contiguous run of it per step from a random start: a batch of 128 costs a tenth of
    drawing each request afresh. Steps are independent unless `ar1` or `waves` is set
    (`DependentSteps`, one series per side).
    """

    def __init__(
        self,
        ratio: float,
        rng: random.Random,
        samples_per_second: float = 10.0,
        batch: int = 1,
        jitter: float = 0.0,
        max_tokens: int = 1,
        drift: float = 0.0,
        tail_sigma: float = 0.5,
        steps_per_second: int | None = None,
        ar1: float = 0.0,
        waves: int = 0,
    ):
        self.ratio = ratio
        self.rng = rng
        self.rate = samples_per_second
        self.batch = batch
        self.pool = ITL_POOL if tail_sigma == 0.5 else _itl_pool(50_000, 8, tail_sigma)
        self.steps_per_second = steps_per_second or max(1, round(samples_per_second / batch))
        self.jitter = jitter
        self.max_tokens = max_tokens
        self.requests = _request_pool(jitter, max_tokens) if batch > 1 else None
        self.drift = drift
        self.clock = 0
        self.blocks: tuple[list[LatencyBlock], list[LatencyBlock]] = ([], [])
        self.merged = tuple({name: Sketch() for name in MERGED} for _ in range(2))
        self.merged_upto = [0, 0]
        self.dependent = (
            tuple(DependentSteps(self.pool, rng, ar1, waves) for _ in range(2))
            if ar1 or waves
            else None
        )

    def advance(self, seconds: float) -> None:
        for _ in range(round(seconds)):
            index = self.clock // BLOCK_SECONDS
            for side, blocks in enumerate(self.blocks):
                if len(blocks) <= index:
                    blocks.append(LatencyBlock(start=index * BLOCK_SECONDS, seconds=BLOCK_SECONDS))
                scale = (self.ratio if side else 1.0) * (1 + self.drift * self.clock / 600)
                self._one_second(blocks[index], scale, side)
            self.clock += 1

    def _one_second(self, block: LatencyBlock, scale: float, side: int) -> None:
        rng, chunk, token = self.rng, block.per_chunk_itl.counts, block.per_token_itl.counts
        if self.dependent is None:
            steps = rng.choices(self.pool, k=self.steps_per_second)
        else:
            steps = self.dependent[side].take(self.steps_per_second)
        for step in steps:
            log_step = math.log(step * scale)
            if self.requests is not None:
                self._one_step(chunk, token, log_step / LOG_GAMMA)
                continue
            for _ in range(self.batch):
                log_gap = log_step + (rng.gauss(0, self.jitter) if self.jitter else 0.0)
                i = math.ceil(log_gap / LOG_GAMMA - 1e-12)
                chunk[i] = chunk.get(i, 0) + 1
                tokens = rng.randint(1, self.max_tokens) if self.max_tokens > 1 else 1
                j = math.ceil((log_gap - math.log(tokens)) / LOG_GAMMA - 1e-12)
                token[j] = token.get(j, 0) + tokens
        mean_step = scale * sum(steps) / len(steps)
        for _ in range(max(1, self.batch // 8)):  # requests ending this second
            block.time_per_output_token.add(mean_step * math.exp(rng.gauss(0, 0.05)))

    def _one_step(self, chunk: dict[int, int], token: dict[int, int], base: float) -> None:
        """One step recorded by every request of the batch: a run of the request pool."""
        assert self.requests is not None
        start = int(self.rng.random() * (len(self.requests) - self.batch))
        ceil = math.ceil
        for chunk_offset, token_offset, tokens in self.requests[start : start + self.batch]:
            i = ceil(base + chunk_offset)
            chunk[i] = chunk.get(i, 0) + 1
            j = ceil(base + token_offset)
            token[j] = token.get(j, 0) + tokens

    def observe(self) -> StageObservations:
        return StageObservations(
            stage_name="stage",
            baseline_latency=self._window(0),
            candidate_latency=self._window(1),
        )

    def _window(self, side: int) -> LatencySamples:
        """A fresh window of the blocks so far, its merged sketches set up incrementally.

        Why: merging every block at every look costs more than the simulation itself; the
        result is the same union `LatencySamples` would compute.
        """
        blocks = self.blocks[side]
        done = self.merged[side]
        complete = len(blocks) - 1  # the last block may still be filling
        for block in blocks[self.merged_upto[side] : complete]:
            for name in MERGED:
                done[name].merge(getattr(block, name))
        self.merged_upto[side] = max(self.merged_upto[side], complete)
        window = LatencySamples(blocks=tuple(blocks), window_seconds=self.clock, shards=1)
        for name in MERGED:
            union = done[name].copy()
            union.merge(getattr(blocks[-1], name))
            window.__dict__[name] = union  # what the cached_property would compute
        return window


MERGED = ("per_chunk_itl", "per_token_itl", "time_per_output_token", "client_delay")


def run_stage(spec: SpecDecodeRolloutSpec, source: AcceptanceSource | LatencySource) -> StageRun:
    """Look every interval until the stage decides; the domain's Analyzing step judges."""
    settings = settings_of(spec, setting_of(spec.speculative))  # as observe builds them
    stage_spec = settings.stages[0]
    start = _t(0)
    status = RolloutState(
        phase=Phase.ANALYZING,
        phase_since=start,
        candidate_speculative=setting_of(spec.speculative),
        candidate_fingerprint=fingerprint_of(spec.speculative),
        stages=[start_stage(stage_spec, start)],
        current_stage=stage_spec.name,
        current_stage_index=0,
    )
    interval = spec.analysis.interval_seconds
    plan = plan_of(spec)  # as observe builds it once a reconcile
    measured = 0.0
    while True:
        step_seconds = 1.0 if measured == 0 else float(interval)
        measured += step_seconds
        source.advance(step_seconds)
        now = _t(stage_spec.warmup_seconds + measured)
        seen = Observations(generation=1, stage=source.observe(), plan=plan, settings=settings)
        step = analyze(settings, status, seen, now)
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
