"""The tuning's report: one typed structure, built once from a run, rendered elsewhere.

`render` turns it into JSON and Markdown (the report ConfigMap's two keys), sparklines and
SVG; `reconciler.tuning_boundary.status_of` keeps only the bounded part for status, so the
resource stays small whatever the search space.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from specdecode.domain.stats import Interval
from specdecode.domain.tuning.cells import CellKey
from specdecode.domain.tuning.model import TuningPlan
from specdecode.domain.tuning.recommend import (
    BreakEven,
    FamilyScore,
    band_weights,
    bands,
    break_even,
    rollout_patch,
    schedule,
    score_families,
)
from specdecode.domain.tuning.run import TuningRun
from specdecode.vocabulary import SCHEDULE

DEFAULT_MAX_BATCH = 4096  # the last band's end when --max-num-seqs is not set


@dataclass(frozen=True)
class Bounds:
    """A figure and its bounds, rounded for the report."""

    value: float
    lower: float
    upper: float

    @classmethod
    def of(cls, interval: Interval | None) -> Bounds | None:
        """None for a figure not measured."""
        if interval is None or math.isnan(interval.value):
            return None
        return cls(round(interval.value, 4), round(interval.lower, 4), round(interval.upper, 4))

    def text(self) -> str:
        """`1.234 [1.200, 1.270]`."""
        return f"{self.value:.3f} [{self.lower:.3f}, {self.upper:.3f}]"


@dataclass(frozen=True)
class CellRow:
    """One config at one load."""

    config: str
    load: int
    seconds: float
    objective: Bounds | None
    tpot_speedup: Bounds | None
    throughput_ratio: Bounds | None
    tail_ratio: Bounds | None
    alpha: Bounds | None
    accepted_length: Bounds | None
    dropped: bool


@dataclass(frozen=True)
class Winner:
    """The leader of one band."""

    low: int
    high: int
    load: int
    config: str  # fingerprint or NONE
    objective: Bounds | None
    decided: bool
    reason: str


@dataclass(frozen=True)
class TuningReport:
    """Everything the tuning found."""

    objective: str
    loads: tuple[int, ...]
    labels: Mapping[str, str]  # fingerprint -> "method k=.."
    configs: Mapping[str, Mapping[str, object]]  # fingerprint -> speculative config (wire)
    rows: tuple[CellRow, ...]
    break_even: Mapping[str, BreakEven]
    winners: tuple[Winner, ...]
    band_weights: tuple[float, ...]
    families: tuple[FamilyScore, ...]
    schedule: list[list[int]] | None  # None: the release has no per-batch-size schedule
    rollout_patch: Mapping[str, object]
    gpu_seconds: float
    exhaustive_gpu_seconds: float
    looks: int
    dropped: tuple[str, ...]
    done: bool
    # How the recommendation depends on production's distribution (defaults: older JSON).
    weights_source: str = ""  # what weighted the bands (production's histogram, ...)
    recommendation: str = ""  # the rollout patch's config in words
    uniform_recommendation: str = ""  # what it would be with equal weights per band


def _label(wire: Mapping[str, object]) -> str:
    extra = f" lookup={wire['prompt_lookup_max']}" if "prompt_lookup_max" in wire else ""
    return f"{wire['method']} k={wire['num_speculative_tokens']}{extra}"


def _recommendation(patch: Mapping[str, object]) -> str:
    spec = patch["spec"]
    wire = spec.get("speculative") if isinstance(spec, Mapping) else None
    if not isinstance(wire, Mapping):
        return "plain decoding"
    steps = wire.get(SCHEDULE)
    return _label(wire) + ("" if steps is None else f" schedule {steps}")


def _weights_source(
    plan: TuningPlan, ranges: list[tuple[int, int]], running: Mapping[int, float] | None
) -> str:
    """What `band_weights` went by: the first of these that says anything about the bands."""
    counted = any(
        w > 0 and lo <= max(c, 1) <= hi for c, w in (running or {}).items() for lo, hi in ranges
    )
    if counted and plan.production is not None:
        return plan.production.phrase()
    if counted:
        return "production's running-request histogram"
    if plan.production_concurrency is not None:
        return f"productionConcurrency {plan.production_concurrency}"
    return "nothing known (equal per band)"


def build_report(run: TuningRun, running: Mapping[int, float] | None = None) -> TuningReport:
    """The report of a run; `running` is production's running-request histogram
    (concurrency -> share of time), which weights the loads for the one config to roll out.
    The report names what weighted them and what equal weights would have recommended, so a
    reader sees whether the choice rests on the distribution."""
    plan = run.plan
    configs = plan.candidates
    loads = run.loads
    standing = run.standing()
    max_batch = plan.max_batch or DEFAULT_MAX_BATCH
    ranges = bands(loads, max_batch)
    weights = band_weights(loads, max_batch, running, plan.production_concurrency)
    families = score_families(configs, loads, run.cells, weights, plan.limits)
    with_schedule = plan.with_schedule
    patch = rollout_patch(families[0], configs, ranges, with_schedule)
    equal = [1.0 / len(loads)] * len(loads)
    uniform = score_families(configs, loads, run.cells, equal, plan.limits)[0]
    rows = []
    for config in configs:
        fingerprint = config.fingerprint
        for load in loads:
            state = run.cells.get(CellKey(fingerprint, load))
            m = state.measurement if state is not None else None
            rows.append(
                CellRow(
                    fingerprint,
                    load,
                    0.0 if state is None else state.seconds,
                    Bounds.of(m.objective if m else None),
                    Bounds.of(m.tpot_speedup if m else None),
                    Bounds.of(m.throughput_ratio if m else None),
                    Bounds.of(m.tail_ratio if m else None),
                    Bounds.of(m.alpha if m else None),
                    Bounds.of(m.accepted_length if m else None),
                    fingerprint in standing.dropped,
                )
            )
    winners = tuple(
        Winner(lo, hi, v.load, v.leader, Bounds.of(v.leader_objective), v.decided, v.reason)
        for (lo, hi), v in zip(ranges, standing.loads, strict=True)
    )
    return TuningReport(
        objective=plan.objective,
        loads=loads,
        labels={c.fingerprint: _label(c.wire) for c in configs},
        configs={c.fingerprint: dict(c.wire) for c in configs},
        rows=tuple(rows),
        break_even={c.fingerprint: break_even(c.fingerprint, loads, run.cells) for c in configs},
        winners=winners,
        band_weights=tuple(round(w, 4) for w in weights),
        families=tuple(families),
        schedule=schedule(families[0].best, ranges) if with_schedule else None,
        rollout_patch=patch,
        gpu_seconds=round(run.gpu_seconds, 1),
        exhaustive_gpu_seconds=run.exhaustive_gpu_seconds(),
        looks=run.looks,
        dropped=tuple(sorted(standing.dropped)),
        done=run.next_round().done,
        weights_source=_weights_source(plan, ranges, running),
        recommendation=_recommendation(patch),
        uniform_recommendation=_recommendation(
            rollout_patch(uniform, configs, ranges, with_schedule)
        ),
    )
