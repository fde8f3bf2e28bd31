"""A seeded simulation of vLLM's step-ITL histograms, for the ServerStep gate's tests and
`benchmarks/gates.py` (which tabulates it with more trials than a unit test can afford).
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from itertools import accumulate
from statistics import NormalDist

from domain_gatesim import LatencySource

from specdecode.api import GateSpec, GateType, ItlDefinition
from specdecode.domain.observations import ServerStepHistograms, StageObservations, StepHistogram
from specdecode_sim.metrics import ITL_BUCKETS

VLLM_BOUNDS = (*ITL_BUCKETS, math.inf)
SERVER_P99 = GateSpec(
    name="p99-step-itl",
    type=GateType.TAIL_LATENCY,
    quantile=0.99,
    tolerance=0.10,
    itl_definition=ItlDefinition.SERVER_STEP,
)
STEP_SIGMA = 0.25  # log-sd of per-step ITL: P99 = 1.79 x median
# Baseline P99 at 50 / sqrt(1.1) ms and the candidate's at 50 x sqrt(1.1) ms: at the
# threshold, the 50 ms edge splits them evenly, the worst place for a bucket-edge bound.
STRADDLING_MEDIAN = 0.050 / math.sqrt(1.1) / math.exp(NormalDist().inv_cdf(0.99) * STEP_SIGMA)


class StepHistogramSource(LatencySource):
    """vLLM's step-ITL histograms of both engines (candidate latency = ratio x baseline's).

    Each engine takes `steps_per_second` steps with lognormal latencies (median `median`,
    log-sd STEP_SIGMA), counted into vLLM's buckets, so the true quantile ratio is exactly
    `ratio`. Each step is recorded once per request in the batch (`batch` times, as vLLM
    does): batch > 1 makes observations dependent. With `report_steps` the histograms carry
    the step count (as `vllm:iteration_tokens_total` gives it), which the gate corrects by.
    With `ar1`, consecutive steps' log latencies form an AR(1) series (the same marginal;
    domain_gatesim.STEP_AR1 is the coefficient measured on the simulator's step trace).
    """

    def __init__(
        self,
        ratio: float,
        rng: random.Random,
        median: float,
        steps_per_second: float = 64.0,
        batch: int = 1,
        report_steps: bool = True,
        ar1: float = 0.0,
    ):
        super().__init__(ratio, rng, steps_per_second)
        self.ar1 = ar1
        self.latent = [rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0)] if ar1 else [0.0, 0.0]
        self.log_median = math.log(median)
        self.batch = batch
        self.report_steps = report_steps
        self.steps = 0
        self.counts = ([0] * len(VLLM_BOUNDS), [0] * len(VLLM_BOUNDS))

    def advance(self, seconds: float) -> None:
        steps = round(seconds * self.rate)
        self.steps += steps
        shock = math.sqrt(1.0 - self.ar1 * self.ar1)
        for side, (counts, scale) in enumerate(zip(self.counts, (1.0, self.ratio), strict=True)):
            for _ in range(steps):
                if self.ar1:
                    z = self.latent[side] = self.ar1 * self.latent[side] + shock * self.rng.gauss()
                    latency = scale * math.exp(self.log_median + STEP_SIGMA * z)
                else:
                    latency = scale * self.rng.lognormvariate(self.log_median, STEP_SIGMA)
                counts[bisect_left(VLLM_BOUNDS, latency)] += self.batch

    def observe(self) -> StageObservations:
        steps = float(self.steps) if self.report_steps else None
        baseline, candidate = (
            StepHistogram(VLLM_BOUNDS, tuple(float(c) for c in accumulate(counts)), steps)
            for counts in self.counts
        )
        return StageObservations(
            stage_name="stage",
            server_step_itl=ServerStepHistograms(baseline=baseline, candidate=candidate),
        )
