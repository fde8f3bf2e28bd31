"""Successive elimination: which configs can still win at which load, and which loads are
decided.

At each load plain decoding competes with every config; a cell is dropped when it is surely
dominated (by `compare.Gaps`) or surely breaks a constraint, and a load is decided when one
survivor remains. Rules in full: docs/internals.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specdecode.domain.stats import Interval
from specdecode.domain.tuning.cells import NONE, CellKey, CellState, exact
from specdecode.domain.tuning.compare import Gaps
from specdecode.domain.tuning.model import Limits


@dataclass(frozen=True)
class LoadVerdict:
    """The state of one load of the ladder."""

    load: int
    leader: str  # config fingerprint or NONE
    leader_objective: Interval
    survivors: tuple[str, ...]  # may still win here (NONE included when it may)
    decided: bool
    reason: str
    settled: tuple[str, ...] = ()  # survivors known to be at most the tolerance above the leader


@dataclass(frozen=True)
class Standing:
    """Everything the plan and the report need from the evidence so far."""

    loads: tuple[LoadVerdict, ...]
    dropped: frozenset[str]
    retired: frozenset[CellKey]  # dominated or infeasible: no more looks

    def verdict(self, load: int) -> LoadVerdict:
        """The verdict of one load."""
        return next(v for v in self.loads if v.load == load)


def infeasible(state: CellState, limits: Limits) -> str | None:
    """Why a cell surely breaks a constraint, or None."""
    seen = state.measurement
    if seen is None:
        return None
    if seen.tail_ratio.lower > limits.tail_ratio_at_most:
        return f"P99 tail ratio >= {seen.tail_ratio.lower:.2f} > {limits.tail_ratio_at_most}"
    if seen.error_rate.lower > limits.error_rate_at_most:
        return f"error rate >= {seen.error_rate.lower:.3f} > {limits.error_rate_at_most}"
    floor = limits.alpha_at_least
    if floor is not None and seen.alpha is not None and seen.alpha.upper < floor:
        return f"alpha <= {seen.alpha.upper:.2f} < {floor}"
    return None


def _objective(state: CellState) -> Interval:
    if state.key.config == NONE:
        return exact(1.0)
    seen = state.measurement
    return seen.objective if seen is not None else Interval(math.nan, 0.0, math.inf, 0)


def confirmed(state: CellState, limits: Limits) -> bool:
    """Whether a cell surely meets every constraint (plain decoding always does)."""
    if state.key.config == NONE:
        return True
    seen = state.measurement
    if seen is None:
        return False
    floor = limits.alpha_at_least
    return (
        seen.tail_ratio.upper <= limits.tail_ratio_at_most
        and seen.error_rate.upper <= limits.error_rate_at_most
        and (floor is None or seen.alpha is None or seen.alpha.lower >= floor)
    )


def plausible(state: CellState, limits: Limits) -> bool:
    """Whether a cell's point estimates meet the constraints (how an undecided load ends)."""
    seen = state.measurement
    if state.key.config == NONE:
        return True
    if seen is None:
        return False
    return (
        seen.tail_ratio.value <= limits.tail_ratio_at_most
        and seen.error_rate.value <= limits.error_rate_at_most
    )


def judge(
    configs: Sequence[str],
    loads: Sequence[int],
    cells: Mapping[CellKey, CellState],
    limits: Limits,
    tolerance: float,
    max_seconds: float,
) -> Standing:
    """The standing of every config at every load, from the cells' latest looks.

    Only cells that surely meet the constraints may dominate others: a faster cell whose
    tail ratio is still uncertain could turn out infeasible, and what it dominated would
    then have been the winner.
    """
    retired: set[CellKey] = set()
    verdicts = []
    for load in loads:
        states = {c: cells.get(CellKey(c, load), CellState(CellKey(c, load))) for c in configs}
        states[NONE] = CellState(CellKey(NONE, load))
        feasible = {c: s for c, s in states.items() if infeasible(s, limits) is None}
        retired |= {CellKey(c, load) for c in states if c not in feasible}
        gaps = Gaps(feasible)
        sure = [c for c, s in feasible.items() if confirmed(s, limits)]
        survivors = {
            c: s
            for c, s in feasible.items()
            if not any(gaps.upper(c, d) < 0 for d in sure if d != c)
        }
        retired |= {CellKey(c, load) for c in feasible if c not in survivors}
        verdicts.append(_verdict(load, survivors, gaps, limits, tolerance, max_seconds))
    dropped = frozenset(c for c in configs if all(CellKey(c, load) in retired for load in loads))
    return Standing(tuple(verdicts), dropped, frozenset(retired))


def _verdict(
    load: int,
    survivors: Mapping[str, CellState],
    gaps: Gaps,
    limits: Limits,
    tolerance: float,
    max_seconds: float,
) -> LoadVerdict:
    candidates = {c: s for c, s in survivors.items() if plausible(s, limits)}
    leader = max(candidates, key=lambda c: (_objective(candidates[c]).value, c == NONE))
    lead = _objective(candidates[leader])
    unmeasured = any(c != NONE and s.measurement is None for c, s in survivors.items())
    within = math.log1p(tolerance)
    settled = tuple(sorted(c for c in survivors if c != leader and gaps.upper(c, leader) <= within))
    separated = len(settled) == len(survivors) - 1
    sure = confirmed(survivors[leader], limits)
    exhausted = all(
        s.seconds >= max_seconds for c, s in survivors.items() if c not in (NONE, *settled)
    )
    if unmeasured:
        decided, reason = False, "not every survivor measured yet"
    elif separated and sure:
        decided, reason = True, f"leader known to within {tolerance:.0%}"
    elif exhausted:
        decided, reason = True, _fallback(leader, survivors, gaps, sure)
    elif not sure:
        decided, reason = False, "the leader's constraints are not yet confirmed"
    else:
        decided, reason = False, f"{len(survivors)} survivors not yet separated"
    return LoadVerdict(load, leader, lead, tuple(sorted(survivors)), decided, reason, settled)


def _fallback(leader: str, survivors: Mapping[str, CellState], gaps: Gaps, sure: bool) -> str:
    """Why an exhausted load picked its leader, with the tolerance the bounds did reach.

    On the same event as a decided pick, the true best is at most exp(max gap) - 1 above a
    leader that surely meets the constraints: a weaker claim than trial.tolerance, stated.
    """
    reason = "every survivor not yet within the tolerance ran trial.maxSeconds"
    worst = max((gaps.upper(c, leader) for c in survivors if c != leader), default=0.0)
    if sure and math.isfinite(worst):
        return f"{reason}: leader by point estimate, within {math.expm1(worst):.0%} of the best"
    return f"{reason}: leader by point estimate"
