"""Seeded tuning simulations: ground truth from the simulator's physics, noisy looks.

Truth. The TPOT speedup of a config at concurrency c is plain step time over (speculative
step time / tokens per step), from the simulator's own modules: `steptime` (roofline step
of the target, verify tokens included), `draft` (drafting cost per method) and the
acceptance table (`acceptance`, per trained head and workload class). n-gram and suffix
acceptance is not a curve in the simulator (it comes from repetition in its synthetic
text), so here they are a match probability times a per-position acceptance, set so the
mean tokens per step reproduce the published study's ITL/TPOT readings at its settings
(suffix 1.76 code / 1.43 chat; n-gram 1.19 / 1.14 at k = 5, lookup 4): an assumption,
labelled as such. Lookup methods verify tokens only when they propose.

Looks. A look of `look` seconds adds look/2 time blocks; each block's log TPOT ratio is
normal around the truth with sd `block_sd(c)` (fewer requests per block at low load:
0.30 / sqrt(1 + c/4), i.e. 0.27 at c = 1 and 0.07 at c = 64; an assumption sized so a
600-second stage bounds a speedup to about +-3 %, as the gates' stages do). The domain
gets the mean and its standard error over all blocks so far and bounds them at the
critical value the run hands out (`TuningRun.begin_look`). The P99 tail ratio is centred
on the step's slowdown (a chunk waits one step) with 2.5x the median's spread, drawn per
look; the accepted length is the truth with a fixed +-3 % band (nothing ranks on it).
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass, field

from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.tuning import SpecDecodeTuningSpec
from specdecode.domain.stats import Interval
from specdecode.domain.tuning.cells import NONE, CellKey, CellMeasurement, log_interval
from specdecode.domain.tuning.run import TuningRun
from specdecode.reconciler.tuning_boundary import plan_of
from specdecode_sim.acceptance import AcceptanceModel, expected_tokens_for_curve, head_key
from specdecode_sim.draft import draft_seconds
from specdecode_sim.profiles import HARDWARE, MODELS
from specdecode_sim.steptime import decode_shape, target_step_seconds

BLOCK_SECONDS = 2
CONTEXT = 1024
# Lookup methods: (match probability, per-position acceptance) per workload, at lookup 4.
LOOKUP = {
    ("suffix", "code"): (0.20, 0.85),
    ("suffix", "chat"): (0.105, 0.85),
    ("ngram", "code"): (0.098, 0.70),
    ("ngram", "chat"): (0.07, 0.70),
}


@dataclass(frozen=True)
class Scenario:
    """One model on one device, one workload class, one search space."""

    name: str
    hardware: str
    model: str
    workload: str
    spec: dict[str, object]
    tp: int = 1

    def tuning_spec(self, **overrides: object) -> SpecDecodeTuningSpec:
        """The SpecDecodeTuning spec, optionally with top-level fields replaced."""
        return SpecDecodeTuningSpec.model_validate({**self.spec, **overrides})


def tokens_and_verified(scenario: Scenario, config: SpeculativeConfig) -> tuple[float, float]:
    """Mean tokens per step and drafted tokens verified per sequence per step."""
    k = config.num_speculative_tokens
    method = config.method.value
    if method in ("suffix", "ngram"):
        match, accept = LOOKUP[(method, scenario.workload)]
        lookup = config.prompt_lookup_max or 4
        match *= 1 + 0.1 * (4 - lookup)
        accept *= 1 - 0.03 * (4 - lookup)
        accepted = sum(accept**i for i in range(1, k + 1))
        return 1.0 + match * accepted, match * k
    head = head_key(method, config.model, scenario.model)
    curve = AcceptanceModel().conditional(method, scenario.workload, k, head=head)
    return expected_tokens_for_curve(curve), float(k)


def true_ratio(scenario: Scenario, config: SpeculativeConfig, load: int) -> float:
    """TPOT speedup of `config` at concurrency `load`, from the physics."""
    return true_ratios(scenario, config, load)[0]


def true_ratios(scenario: Scenario, config: SpeculativeConfig, load: int) -> tuple[float, float]:
    """TPOT speedup, and the step's slowdown (a chunk's gap: the tail ratio's centre)."""
    hw, model = HARDWARE[scenario.hardware], MODELS[scenario.model]
    plain = target_step_seconds(hw, model, scenario.tp, decode_shape(load, 0, CONTEXT))
    tokens, verified = tokens_and_verified(scenario, config)

    def step_with(drafted: int) -> float:
        shape = dataclasses.replace(decode_shape(load, drafted, CONTEXT), speculative=True)
        return target_step_seconds(hw, model, scenario.tp, shape)

    whole = math.floor(verified)  # a fractional verify load: interpolate between whole ones
    step = step_with(whole) + (verified - whole) * (step_with(whole + 1) - step_with(whole))
    k = config.num_speculative_tokens
    step += draft_seconds(config.method.value, hw, model, scenario.tp, load, k, CONTEXT)
    return plain / (step / tokens), step / plain


def block_sd(load: int) -> float:
    """Spread of one 2-second block's log TPOT ratio at this concurrency (assumed)."""
    return 0.30 / math.sqrt(1 + load / 4)


@dataclass
class CellBlocks:
    """Running sums of a cell's block log-ratios."""

    count: int = 0
    total: float = 0.0
    squares: float = 0.0

    def add(self, rng: random.Random, mean: float, sd: float, blocks: int) -> None:
        """Draw `blocks` more blocks."""
        for _ in range(blocks):
            value = rng.gauss(mean, sd)
            self.count += 1
            self.total += value
            self.squares += value * value

    def estimate(self) -> tuple[float, float]:
        """Mean log ratio and its standard error."""
        mean = self.total / self.count
        variance = (
            max(self.squares / self.count - mean * mean, 1e-12) * self.count / (self.count - 1)
        )
        return mean, math.sqrt(variance / self.count)


@dataclass
class SimulatedTuning:
    """A tuning run fed by seeded simulated looks."""

    scenario: Scenario
    spec: SpecDecodeTuningSpec
    rng: random.Random
    run: TuningRun = field(init=False)
    truth: dict[CellKey, float] = field(init=False)
    tail_truth: dict[CellKey, float] = field(init=False)
    blocks: dict[CellKey, CellBlocks] = field(default_factory=dict)
    accepted: dict[str, float] = field(init=False)
    noise_scale: float = 1.0  # multiplies block_sd: how savings depend on the noise
    paired: bool = True  # hand the domain each look's log standard error (paired bounds)

    def __post_init__(self) -> None:
        self.run = TuningRun.start(plan_of(self.spec))
        self.truth, self.tail_truth, self.accepted = {}, {}, {}
        for config in self.spec.configs():
            tokens, _ = tokens_and_verified(self.scenario, config)
            self.accepted[config.fingerprint()] = tokens
            for load in self.spec.loads():
                key = CellKey(config.fingerprint(), load)
                self.truth[key], self.tail_truth[key] = true_ratios(self.scenario, config, load)

    def measure(self, key: CellKey, z: float, seconds: int) -> CellMeasurement:
        """One more look at a cell: its blocks so far, bounded at critical value z."""
        blocks = self.blocks.setdefault(key, CellBlocks())
        sd = block_sd(key.load) * self.noise_scale
        blocks.add(self.rng, math.log(self.truth[key]), sd, seconds // BLOCK_SECONDS)
        mean, se = blocks.estimate()
        speedup = log_interval(mean, se, blocks.count, z)
        # The P99 chunk gap: centred on the step's slowdown, 2.5x the median's spread.
        tail_se = 2.5 * se
        tail_noise = self.rng.gauss(0.0, tail_se)
        tail = log_interval(math.log(self.tail_truth[key]) + tail_noise, tail_se, blocks.count, z)
        length = self.accepted[key.config]
        accepted = Interval(length, length * 0.97, length * 1.03, blocks.count)
        errors = Interval(0.0, 0.0, 0.01, blocks.count)
        return CellMeasurement(
            speedup,
            speedup,
            speedup,
            tail,
            errors,
            accepted_length=accepted,
            objective_log_se=se if self.paired else None,
        )

    def finish(self) -> TuningRun:
        """Run rounds until the plan is done."""
        while True:
            planned = self.run.next_round()
            if planned.done:
                return self.run
            critical = self.run.begin_look(planned)
            for key in planned.cells:
                self.run.record(key, self.measure(key, critical[key], self.spec.trial.look_seconds))


def pick_right(sim: SimulatedTuning, picks: dict[int, str]) -> bool:
    """Every load's pick within trial.tolerance of the true best that meets maxTailRatio.

    The same tolerance applies to the constraint: a pick whose true tail ratio is within
    it of the maximum counts as meeting it (no bound can tell those apart either).
    """
    tolerance = sim.spec.trial.tolerance
    limit = sim.spec.constraints.max_tail_ratio
    for load, config in picks.items():
        feasible = [
            r for k, r in sim.truth.items() if k.load == load and sim.tail_truth[k] <= limit
        ]
        best = max([1.0, *feasible])
        if config == NONE:
            ratio, tail = 1.0, 1.0
        else:
            ratio, tail = sim.truth[CellKey(config, load)], sim.tail_truth[CellKey(config, load)]
        if ratio < best * (1 - tolerance) or tail > limit * (1 + tolerance):
            return False
    return True


def point_picks(sim: SimulatedTuning, seconds: int, rng: random.Random) -> dict[int, str]:
    """The references: every cell `seconds` long, the best point estimate whose tail-ratio
    point estimate meets the maximum wins (no bounds, no early stop)."""
    blocks = seconds // BLOCK_SECONDS
    limit = sim.spec.constraints.max_tail_ratio
    picks = {}
    for load in sim.spec.loads():
        best, best_value = NONE, 1.0
        se = block_sd(load) * sim.noise_scale / math.sqrt(blocks)
        for config in sim.run.configs:
            key = CellKey(config, load)
            value = sim.truth[key] * math.exp(rng.gauss(0.0, se))
            tail = sim.tail_truth[key] * math.exp(rng.gauss(0.0, 2.5 * se))
            if value > best_value and tail <= limit:
                best, best_value = config, value
        picks[load] = best
    return picks
