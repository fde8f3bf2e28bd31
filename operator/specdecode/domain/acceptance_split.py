"""The candidate's acceptance per traffic group, as status shows it.

Why: the gates judge the whole prompt set, which can pass while one part of the traffic
pays for drafts it rejects; on-call needs to see which part. Nothing is judged here: the
figures carry their requests so a thin group shows as thin.
The estimator per source: docs/internals.md. The wire's form: `reconciler.stage_load`.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

from specdecode.domain.acceptance_moments import AcceptedMoments, GroupEvidence
from specdecode.domain.clustered import t_critical
from specdecode.domain.gates.counters import accepted_per_step
from specdecode.domain.observations import AcceptanceCounts, LatencySamples, MetricError
from specdecode.domain.traffic_groups import OTHER_GROUP, fold_groups, parse_key
from specdecode.vocabulary import MAX_TRAFFIC_GROUPS, AcceptanceBasis

SPLIT_CONFIDENCE = 0.95  # two-sided, per group
DIGITS = 4  # figures in status are rounded: they are read, not judged


@dataclass(frozen=True)
class GroupAcceptance:
    """One traffic group's acceptance on the candidate over the window: its labels, the
    requests and decode steps behind it, accepted tokens per step, and alpha with its
    interval (None: not estimable) on its `basis`."""

    traffic_class: str
    temperature: str
    output_length: str
    requests: int
    steps: int
    accepted_per_step: float | None
    alpha: float | None
    lower_bound: float | None
    upper_bound: float | None
    basis: AcceptanceBasis


def acceptance_by_traffic(
    window: LatencySamples, counts: AcceptanceCounts | MetricError | None = None
) -> list[GroupAcceptance]:
    """The candidate window's groups, largest first (`other` last), at most
    MAX_TRAFFIC_GROUPS."""
    draft_length = None
    if isinstance(counts, AcceptanceCounts) and counts.drafts > 0 and counts.draft_tokens > 0:
        draft_length = counts.draft_tokens / counts.drafts
    groups = fold_groups(window.by_traffic, MAX_TRAFFIC_GROUPS)
    ranked = sorted(
        groups.items(), key=lambda item: (item[0] == OTHER_GROUP.key, -item[1].requests, item[0])
    )
    return [_group(key, evidence, draft_length) for key, evidence in ranked]


def _group(key: str, evidence: GroupEvidence, draft_length: float | None) -> GroupAcceptance:
    labels = parse_key(key)
    engine = evidence.engine
    if engine.requests and engine.steps > 0:  # steps here: draft tokens
        per_step = engine.accepted / evidence.engine_steps if evidence.engine_steps else None
        alpha, lower, upper = _bounded(engine, 1.0)
        requests, steps, basis = engine.requests, evidence.engine_steps, AcceptanceBasis.ENGINE
    else:
        stream = evidence.stream
        per_step = stream.accepted / stream.steps if stream.steps > 0 else None
        alpha = lower = upper = None
        if draft_length is not None:
            alpha, lower, upper = _bounded(stream, 1.0 / draft_length)
        requests, steps, basis = stream.requests, round(stream.steps), AcceptanceBasis.STREAM
    return GroupAcceptance(
        traffic_class=labels.traffic_class,
        temperature=labels.temperature,
        output_length=labels.length,
        requests=requests,
        steps=steps,
        accepted_per_step=None if per_step is None else round(per_step, DIGITS),
        alpha=alpha,
        lower_bound=lower,
        upper_bound=upper,
        basis=basis,
    )


def _bounded(
    moments: AcceptedMoments, scale: float
) -> tuple[float | None, float | None, float | None]:
    """scale * sum a / sum n, clamped to [0, 1], with its interval (None with < 2 requests)."""
    if moments.steps <= 0:
        return None, None, None
    value = scale * moments.accepted / moments.steps
    estimate = accepted_per_step(moments)
    if estimate is None:
        return _unit(value), None, None
    z = NormalDist().inv_cdf(1.0 - (1.0 - SPLIT_CONFIDENCE) / 2)
    margin = t_critical(z, estimate.clusters - 1) * estimate.se * scale
    return _unit(value), _unit(value - margin), _unit(value + margin)


def _unit(value: float) -> float:
    return round(min(1.0, max(0.0, value)), DIGITS)
