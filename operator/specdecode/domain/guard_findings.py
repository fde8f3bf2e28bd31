"""What one guard look found, per half: acceptance (`drift`) and latency (`latency_drift`).

Why apart from `guarding`: `guarding` decides the reaction (record, Event, rollback,
re-analysis), which is the same whichever half found the drift; here each half turns its
check into a `Finding` (a `Drift` to record, or that a recorded drift of its kind is
surely over) with the figures for people. Both judge the same look of the same grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from specdecode.domain.drift import DriftCheck, DriftVerdict, GuardLook
from specdecode.domain.guard_model import Drift, GuardPlan, GuardState
from specdecode.domain.latency_drift import (
    LatencyCheck,
    LatencyReference,
    LatencyVerdict,
    ProductionLatency,
    check_latency_drift,
    latency_guarded,
)
from specdecode.domain.observations import MetricError
from specdecode.vocabulary import DriftKind


@dataclass(frozen=True)
class Finding:
    """One half's word on the look: a drift to record, or that its drift is over."""

    drift: Drift | None = None
    recovered: str | None = None  # the DriftRecovered Event's text, when surely back


def _window(look: GuardLook) -> str:
    return f"over the {look.seconds:.0f}s window from {look.window_start.isoformat()}"


def _recorded(
    kind: DriftKind, look: GuardLook, now: datetime, blocks: int, message: str, **figures: float
) -> Drift:
    """A drift as status keeps it: what every half records (kind, when, the window, its
    blocks, the message) and the half's own figures."""
    return Drift(
        kind=kind,
        detected_at=now,
        window_start=look.window_start,
        window_seconds=look.seconds,
        blocks=blocks,
        message=message,
        figures=tuple(figures.items()),
    )


def acceptance_finding(
    check: DriftCheck, threshold: float, look: GuardLook, now: datetime
) -> Finding:
    """The acceptance half's finding from its check at `look`."""
    if check.verdict is DriftVerdict.ABOVE:
        text = f"production alpha {check.alpha:.3f} is above minAlpha {threshold:g} again"
        return Finding(recovered=text)
    if check.verdict is not DriftVerdict.DRIFTED:
        return Finding()
    assert check.alpha is not None and check.lower is not None and check.upper is not None
    message = (
        f"production alpha {check.alpha:.3f} [{check.lower:.3f}, {check.upper:.3f}] is below "
        f"minAlpha {threshold:g} {_window(look)} ({check.blocks} blocks, "
        f"{check.draft_tokens:.0f} draft tokens)"
    )
    drift = _recorded(
        DriftKind.ACCEPTANCE,
        look,
        now,
        check.blocks,
        message,
        alpha=round(check.alpha, 4),
        lower_bound=round(check.lower, 4),
        upper_bound=round(check.upper, 4),
        threshold=threshold,
        draft_tokens=round(check.draft_tokens),
    )
    return Finding(drift=drift)


def latency_check(
    plan: GuardPlan,
    state: GuardState,
    observed: ProductionLatency | MetricError | None,
    look: GuardLook,
) -> tuple[LatencyCheck, LatencyReference] | None:
    """The latency half's check at `look`; None when it has nothing to judge (turned off,
    no reference figure, the observation missing, failed or of another look)."""
    reference = latency_guarded(plan, state)
    if reference is None or not isinstance(observed, ProductionLatency):
        return None
    if observed.look_at != look.at:
        return None
    tolerance = plan.latency_tolerance
    return check_latency_drift(observed.blocks, reference, tolerance, look.times), reference


def latency_finding(
    judged: tuple[LatencyCheck, LatencyReference] | None, look: GuardLook, now: datetime
) -> Finding:
    """The latency half's finding from its check at `look`."""
    if judged is None:
        return Finding()
    check, reference = judged
    q = f"P{reference.quantile * 100:g}"
    if check.verdict is LatencyVerdict.BELOW:
        text = f"production's step-ITL {q} is at or under {check.edge:g}s again"
        return Finding(recovered=text)
    if check.verdict is not LatencyVerdict.DRIFTED:
        return Finding()
    assert check.share is not None and check.lower is not None and check.upper is not None
    assert check.edge is not None
    baseline = reference.baseline_seconds
    plain = f" (baseline {baseline * 1000:.1f} ms)" if baseline is not None else ""
    message = (
        f"production's server step-ITL {q} is above {check.edge * 1000:g} ms: "
        f"{check.share:.2%} [{check.lower:.2%}, {check.upper:.2%}] of its observations "
        "(one per request per step) took longer, "
        f"more than the {check.allowed:.2%} a {q} at or under it allows; the line is the "
        f"candidate's {q} {reference.seconds * 1000:.1f} ms{plain} at stage "
        f"{reference.stage} x {check.line / reference.seconds:.2f} "
        f"(latencyTolerance), {_window(look)} ({check.blocks} blocks, "
        f"{check.observations:.0f} observations)"
    )
    drift = _recorded(
        DriftKind.LATENCY,
        look,
        now,
        check.blocks,
        message,
        lower_bound=round(check.lower, 6),
        upper_bound=round(check.upper, 6),
        threshold=round(check.allowed, 6),
        tail_share=round(check.share, 6),
        edge_seconds=check.edge,
        reference_seconds=round(reference.seconds, 6),
        observations=round(check.observations),
    )
    return Finding(drift=drift)
