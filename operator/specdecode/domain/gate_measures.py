"""What every gate measure shares: the `Measurement` a look yields and how bounds judge.

Each measure (one module per gate type under `gates/`) returns the statistic, its bounds,
and the verdict they support; `gate_boundary` turns it into the `GateResult` in status,
field by field by name (one field table: this dataclass's).
"""

from __future__ import annotations

from dataclasses import dataclass

from specdecode.domain.observations import LatencySamples, MetricError
from specdecode.domain.stats import Interval
from specdecode.vocabulary import GateVerdict

# How a look refused for its load client's sake starts its reason, then "the <side> load
# client ...": the `specdecode_load_saturated` gauge and the tuning runner read it back.
SATURATED = "shadow load saturated"
SATURATION_SIDES = ("baseline", "candidate")
# An open-loop side may miss this share of its arrivals (sender over a second behind; see
# `specdecode_load.schedule.next_arrival`) before its latency no longer answers the stage.
MAX_SKIPPED_SHARE = 0.01


@dataclass(frozen=True)
class Measurement:
    """What one look found, before the gate's counters are applied."""

    verdict: GateVerdict
    reason: str
    value: float | None = None
    lower_bound: float | None = None
    upper_bound: float | None = None
    threshold: float | None = None
    samples: int | None = None
    baseline_value: float | None = None
    candidate_value: float | None = None
    mean_acceptance_length: float | None = None  # 1 + accepted / drafts (tokens per step)
    acceptance_per_position: tuple[float, ...] = ()  # P(at least i+1 accepted) per draft
    units: int | None = None  # independent units: requests, time blocks or steps
    stream_value: float | None = None  # the same figure from the streamed chunks
    # TailLatency: vLLM's step-ITL quantiles at the gate's q, a cross-check of the client's.
    server_baseline_value: float | None = None
    server_candidate_value: float | None = None


def judged(
    verdict: GateVerdict,
    reason: str,
    interval: Interval,
    threshold: float,
    baseline_value: float | None = None,
    candidate_value: float | None = None,
    units: int | None = None,
) -> Measurement:
    """A decided (or undecided) look that carries its interval's numbers into status."""
    return Measurement(
        verdict,
        reason,
        value=interval.value,
        lower_bound=interval.lower,
        upper_bound=interval.upper,
        threshold=threshold,
        samples=interval.samples,
        baseline_value=baseline_value,
        candidate_value=candidate_value,
        units=units,
    )


def metric_error(source: MetricError) -> Measurement:
    """A failed metric source: verdict Error, with its message."""
    return Measurement(GateVerdict.ERROR, f"metric source {source.source}: {source.message}")


def relation(verdict: GateVerdict, higher_is_better: bool) -> str:
    """How a judged value stands against its threshold in a reason: passed, failed or `~`."""
    passed, failed = (">=", "<") if higher_is_better else ("<=", ">")
    return {GateVerdict.SUCCESSFUL: passed, GateVerdict.FAILED: failed}.get(verdict, "~")


def judge_at_least(interval: Interval, threshold: float) -> GateVerdict:
    """Higher is better: pass on the lower bound, fail on the upper."""
    if interval.lower >= threshold:
        return GateVerdict.SUCCESSFUL
    if interval.upper < threshold:
        return GateVerdict.FAILED
    return GateVerdict.INCONCLUSIVE


def judge_at_most(interval: Interval, threshold: float) -> GateVerdict:
    """Lower is better: pass on the upper bound, fail on the lower."""
    if interval.upper <= threshold:
        return GateVerdict.SUCCESSFUL
    if interval.lower > threshold:
        return GateVerdict.FAILED
    return GateVerdict.INCONCLUSIVE


def incomplete_window(threshold: float, *sides: LatencySamples | None) -> Measurement | None:
    """Inconclusive when a side's load window is incomplete (a load shard did not answer).

    Why one place: every client-side gate must refuse to judge what the remaining shards
    saw below the stage's load (see `load_window`).
    """
    why = next((side.incomplete for side in sides if side is not None and side.incomplete), None)
    return None if why is None else Measurement(GateVerdict.INCONCLUSIVE, why, threshold=threshold)


def mostly_failed_window(threshold: float, *sides: LatencySamples | None) -> Measurement | None:
    """Inconclusive when most of a side's requests failed: its timings are the failures' waits.

    Why: a failed request adds its last wait to the latency data (so a failure is never
    silently absent), but a window made mostly of failures measures how errors are timed,
    not the engine; judging it would let two equally broken sides pass a latency gate.
    Whether the failures themselves are acceptable is the ErrorRate gate's question.
    """
    for name, side in zip(("baseline", "candidate"), sides, strict=False):
        if side is not None and side.requests_failed > side.requests_ok:
            why = (
                f"{side.requests_failed} of {side.requests_failed + side.requests_ok} "
                f"{name} requests failed: its latency is the failures', not the engine's"
            )
            return Measurement(GateVerdict.INCONCLUSIVE, why, threshold=threshold)
    return None


def behind_schedule_window(threshold: float, *sides: LatencySamples | None) -> Measurement | None:
    """Inconclusive when an open-loop side's sender skipped over MAX_SKIPPED_SHARE of its
    arrivals: that engine was offered less than the stage's request rate.

    Why: open-loop load is the same Poisson schedule on both sides; a side whose sender
    fell behind (its loop starved, or every in-flight slot held by a slow engine) was
    measured at a lighter load than the other, which flatters it. Comparing the two would
    be a verdict on unequal evidence, so the look says which side and how much instead.
    """
    for name, side in zip(SATURATION_SIDES, sides, strict=False):
        if side is None or not side.arrivals_skipped:
            continue
        offered = side.arrivals_skipped + side.requests_ok + side.requests_failed
        if side.arrivals_skipped > MAX_SKIPPED_SHARE * offered:
            why = (
                f"{SATURATED}: the {name} load client fell behind the stage's request rate "
                f"and skipped {side.arrivals_skipped} of {offered} arrivals (over "
                f"{MAX_SKIPPED_SHARE:.0%}), so its engine saw less than the stage's load; add "
                "load pods (spec.analysis.traffic.loadGenerator) or lower the stage's "
                "requestRate"
            )
            return Measurement(GateVerdict.INCONCLUSIVE, why, threshold=threshold)
    return None
