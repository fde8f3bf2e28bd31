"""Error spending over a stage's looks: a group-sequential boundary, not a Bonferroni split.

Why: successive looks share most of their data, so splitting the error evenly wastes it. A
Hwang-Shih-DeCani spending function (gamma = -1) sets each look's critical value by the
exact recursion, valid for any number of looks at data-independent times.
Pure standard library. Rationale: docs/internals.md; measured: docs/measured.md.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

SPENDING_GAMMA = -1.0
GRID_POINTS = 161  # grid over the continuation region; more changes the values < 1e-4
_NORMAL = NormalDist()


def spent(alpha: float, t: float, gamma: float | None = None) -> float:
    """Error spent by information time t: alpha (1 - e^(-gamma t)) / (1 - e^(-gamma))."""
    gamma = SPENDING_GAMMA if gamma is None else gamma
    t = min(1.0, max(0.0, t))
    if gamma == 0:
        return alpha * t
    return alpha * (1.0 - math.exp(-gamma * t)) / (1.0 - math.exp(-gamma))


def _upper_tail(x: float) -> float:
    return 1.0 - _NORMAL.cdf(x) if x < 0 else _NORMAL.cdf(-x)


Density = tuple[tuple[float, ...], tuple[float, ...]]  # grid points (W scale), sub-density


def _weighted(points: tuple[float, ...], values: tuple[float, ...]) -> tuple[float, ...]:
    """Simpson's rule weights times the density: the integral is their sum."""
    if len(points) < 3:
        return values
    width = points[1] - points[0]
    last = len(points) - 1
    return tuple(
        v * width / 3 * (1 if i in (0, last) else 4 if i % 2 else 2) for i, v in enumerate(values)
    )


def _crossing(density: Density, boundary: float, step_sd: float) -> float:
    """P(continue so far and W(t_k) >= boundary), integrating over the previous grid."""
    points, values = density
    if not points:
        return 0.0
    return sum(
        v * _upper_tail((boundary - u) / step_sd)
        for u, v in zip(points, _weighted(points, values), strict=True)
    )


def _advance(density: Density, top: float, step_sd: float, t: float) -> Density:
    """The sub-density of W(t) on (-8 sqrt(t), top): the previous one convolved, truncated."""
    points, values = density
    bottom = -8.0 * math.sqrt(t)
    top = min(top, 8.0 * math.sqrt(t))
    if top <= bottom:
        return (), ()
    weighted = _weighted(points, values)
    new_points = tuple(bottom + (top - bottom) * i / (GRID_POINTS - 1) for i in range(GRID_POINTS))
    norm = 1.0 / (step_sd * math.sqrt(2 * math.pi))
    pairs = tuple(zip(points, weighted, strict=True))
    new_values = tuple(
        norm * sum(v * math.exp(-0.5 * ((w - u) / step_sd) ** 2) for u, v in pairs)
        for w in new_points
    )
    return new_points, new_values


@lru_cache(maxsize=4096)
def _state(times: tuple[float, ...], alpha: float) -> tuple[tuple[float, ...], Density]:
    """Critical values (z scale) for looks at `times`, and the sub-density after the last."""
    if not times:
        return (), ((0.0,), (1.0,))  # a point mass at W(0) = 0
    earlier, density = _state(times[:-1], alpha)
    t, before = times[-1], (times[-2] if len(times) > 1 else 0.0)
    increment = spent(alpha, t) - spent(alpha, before)
    if t <= before + 1e-9 or increment <= 1e-15:
        critical = math.inf
        boundary = math.inf
    else:
        step_sd = math.sqrt(t - before)
        if len(density[0]) == 1:  # the first look: W(t) is N(0, t) exactly
            boundary = math.sqrt(t) * _NORMAL.inv_cdf(1.0 - increment)
        else:
            low, high = -10.0 * math.sqrt(t), 12.0 * math.sqrt(t)
            for _ in range(60):
                middle = (low + high) / 2
                low, high = (
                    (middle, high)
                    if _crossing(density, middle, step_sd) > increment
                    else (low, middle)
                )
            boundary = high
        critical = boundary / math.sqrt(t)
    step = math.sqrt(max(t - before, 1e-12))
    if len(density[0]) == 1:
        points = tuple(
            -8.0 * math.sqrt(t)
            + (min(boundary, 8.0 * math.sqrt(t)) + 8.0 * math.sqrt(t)) * i / (GRID_POINTS - 1)
            for i in range(GRID_POINTS)
        )
        values = tuple(_NORMAL.pdf(w / math.sqrt(t)) / math.sqrt(t) for w in points)
        after: Density = (points, values)
    else:
        after = _advance(density, boundary, step, t)
    return (*earlier, critical), after


def critical_values(times: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    """One-sided critical values (z scale) for looks at information times `times`.

    Looks must come in order; times past 1 count as 1 (everything is spent by then).
    """
    clipped = tuple(round(min(1.0, max(1e-6, t)), 6) for t in times)
    return _state(clipped, alpha)[0]


def nominal_error(critical: float) -> float:
    """The one-sided error of a single normal bound at this critical value."""
    return 0.0 if math.isinf(critical) else _upper_tail(critical)
