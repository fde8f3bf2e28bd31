"""From the standing to a recommendation: break-even, winners per band, the k schedule.

Break-even is bounded over the ladder by where a config surely wins and surely loses;
each ladder load stands for a band of concurrencies; the winners per band become the k
schedule. Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specdecode.domain.tuning.cells import NONE, CellKey, CellState
from specdecode.domain.tuning.elimination import infeasible, plausible
from specdecode.domain.tuning.model import Candidate, Limits
from specdecode.vocabulary import SCHEDULE

K_FIELD = "num_speculative_tokens"


@dataclass(frozen=True)
class BreakEven:
    """Where a config's ratio crosses 1: in (above, at_or_below]; None = beyond the ladder."""

    above: int | None  # highest load it surely wins up to (None: not even the first)
    at_or_below: int | None  # lowest load from which it surely loses (None: not within)
    estimate: float | None  # log-interpolated crossing of the point estimates


def break_even(config: str, loads: Sequence[int], cells: Mapping[CellKey, CellState]) -> BreakEven:
    """The bounded crossing of one config over the ladder."""
    wins, loses, points = [], [], []
    for load in loads:
        seen = cells.get(CellKey(config, load))
        m = seen.measurement if seen is not None else None
        wins.append(m is not None and m.objective.lower > 1.0)
        loses.append(m is not None and m.objective.upper < 1.0)
        points.append(None if m is None else m.objective.value)
    above = None
    for load, won in zip(loads, wins, strict=True):
        if not won:
            break
        above = load
    at_or_below = None
    for load, lost in reversed(list(zip(loads, loses, strict=True))):
        if not lost:
            break
        at_or_below = load
    return BreakEven(above, at_or_below, _crossing(loads, points))


def _crossing(loads: Sequence[int], points: Sequence[float | None]) -> float | None:
    for i in range(len(loads) - 1):
        a, b = points[i], points[i + 1]
        if a is not None and b is not None and a > 1.0 >= b:
            share = math.log(a) / (math.log(a) - math.log(b)) if a != b else 0.0
            return math.exp(math.log(loads[i]) + share * math.log(loads[i + 1] / loads[i]))
    return None


def bands(loads: Sequence[int], max_batch: int) -> list[tuple[int, int]]:
    """Inclusive concurrency ranges each ladder load stands for."""
    edges = [math.floor(math.sqrt(a * b)) for a, b in itertools.pairwise(loads)]
    lows = [1, *(edge + 1 for edge in edges)]
    highs = [*edges, max(max_batch, loads[-1])]
    return list(zip(lows, highs, strict=True))


def band_weights(
    loads: Sequence[int],
    max_batch: int,
    running: Mapping[int, float] | None,
    production: int | None,
) -> list[float]:
    """Share of production time in each band (sums to 1). `running` is a histogram of
    `vllm:num_requests_running` samples over a window (concurrency -> weight), read per
    engine pod by `adapters.metrics.running`."""
    ranges = bands(loads, max_batch)
    if running:
        raw = [sum(w for c, w in running.items() if lo <= max(c, 1) <= hi) for lo, hi in ranges]
        if sum(raw) > 0:
            return [w / sum(raw) for w in raw]
    if production is not None:
        return [1.0 if lo <= production <= hi else 0.0 for lo, hi in ranges]
    return [1.0 / len(loads)] * len(loads)


def family_of(config: Candidate) -> str:
    """A config without its k: the configs one k schedule can switch between."""
    wire = config.wire
    return ",".join(f"{key}={wire[key]}" for key in sorted(wire) if key != K_FIELD)


@dataclass(frozen=True)
class FamilyScore:
    """One family's best k per band, and its weighted score."""

    family: str
    best: tuple[tuple[str, int, float], ...]  # per band: (fingerprint or NONE, k, ratio)
    score: float  # with a schedule: k = 0 where plain decoding is better
    single: tuple[str, float]  # best single config of the family without a schedule


def score_families(
    configs: Sequence[Candidate],
    loads: Sequence[int],
    cells: Mapping[CellKey, CellState],
    weights: Sequence[float],
    limits: Limits,
) -> list[FamilyScore]:
    """Every family's schedule and score, best first. A config counts at a load at its
    point estimate when it may meet the constraints there (not surely infeasible, point
    estimates within them); dropped configs count too: losing to another family somewhere
    does not make them a family's worst k."""
    by_family: dict[str, list[Candidate]] = {}
    for config in configs:
        by_family.setdefault(family_of(config), []).append(config)
    scores = []
    for family, members in by_family.items():
        best: list[tuple[str, int, float]] = []
        singles: dict[str, list[float]] = {}
        for load in loads:
            ratios = {c.fingerprint: _point(cells, c.fingerprint, load, limits) for c in members}
            top = max(members, key=lambda c: ratios[c.fingerprint])
            value = ratios[top.fingerprint]
            best.append((top.fingerprint, top.k, value) if value > 1.0 else (NONE, 0, 1.0))
            for fingerprint, ratio in ratios.items():
                singles.setdefault(fingerprint, []).append(ratio)
        score = sum(w * ratio for w, (_, _, ratio) in zip(weights, best, strict=True))
        single = max(
            (
                (f, sum(w * r for w, r in zip(weights, rs, strict=True)))
                for f, rs in singles.items()
            ),
            key=lambda item: item[1],
        )
        scores.append(FamilyScore(family, tuple(best), score, single))
    return sorted(scores, key=lambda s: -s.score)


def _point(cells: Mapping[CellKey, CellState], config: str, load: int, limits: Limits) -> float:
    state = cells.get(CellKey(config, load))
    if state is None or state.measurement is None:
        return 0.0  # never measured: it cannot be recommended there
    if infeasible(state, limits) is not None or not plausible(state, limits):
        return 0.0
    return state.measurement.objective.value


def schedule(
    best: Sequence[tuple[str, int, float]], ranges: Sequence[tuple[int, int]]
) -> list[list[int]]:
    """`num_speculative_tokens_per_batch_size`: [lo, hi, k] per band, equal neighbours merged."""
    entries: list[list[int]] = []
    for (lo, hi), (_, k, _) in zip(ranges, best, strict=True):
        if entries and entries[-1][2] == k:
            entries[-1][1] = hi
        else:
            entries.append([lo, hi, k])
    return entries


def rollout_patch(
    family: FamilyScore,
    configs: Sequence[Candidate],
    ranges: Sequence[tuple[int, int]],
    with_schedule: bool,
) -> dict[str, object]:
    """A merge patch for a SpecDecodeRollout's spec: the recommended `speculative` (its
    keys as vLLM reads them; `tuning_boundary`'s test checks the wire model accepts it)."""
    by_print = {c.fingerprint: c for c in configs}
    if not with_schedule:
        chosen = by_print[family.single[0]]
        return {"spec": {"speculative": dict(chosen.wire)}}
    entries = schedule(family.best, ranges)
    top_k = max(k for _, _, k in entries)
    if top_k == 0:
        return {"spec": {"speculative": None}}
    template = next(by_print[f] for f, _, _ in family.best if f != NONE)
    wire = {**template.wire, K_FIELD: top_k, SCHEDULE: entries}
    return {"spec": {"speculative": wire}}
