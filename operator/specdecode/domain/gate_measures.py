"""What every gate measure shares: the `Measurement` a look yields and how bounds judge.

Each measure (one module per gate type under `gates/`) returns the statistic, its bounds,
and the verdict they support; `gate_boundary` turns it into the `GateResult` in status,
field by field by name (one field table: this dataclass's).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
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
class UnsentLimit:
    """How much of what a side was offered may go unsent before its latency no longer
    answers the stage, and who failed to send it (so a refusal says what to change).

    Prompts traffic: the load pods' open-loop sender skipped arrivals (`MAX_SKIPPED_SHARE`).
    Mirror traffic through the splitter (`splitter_in_flight` set: its cap): it shed
    mirrored requests, both sides the same ones, up to the rollout's `maxShedFraction`.
    """

    max_share: float = MAX_SKIPPED_SHARE
    splitter_in_flight: int | None = None

    def shortfall(self, name: str, skipped: int, offered: int) -> str:
        """Why a side that missed `skipped` of `offered` no longer answers the stage."""
        share = f"over {self.max_share * 100:g}%"
        if self.splitter_in_flight is None:
            return (
                f"{SATURATED}: the {name} load client fell behind the stage's request rate "
                f"and skipped {skipped} of {offered} arrivals ({share}), so its engine saw "
                "less than the stage's load; add load pods "
                "(spec.analysis.traffic.loadGenerator) or lower the stage's requestRate"
            )
        # Within a status reason's 320 characters with its numbers: the remedy must survive.
        return (
            f"{SATURATED}: the {name} side lost {skipped} of {offered} mirrored requests to "
            f"splitter sheds ({share} = traffic.splitter.maxShedFraction; at its cap of "
            f"{self.splitter_in_flight} in flight, or while a side had no ready engine): raise "
            "splitter.maxInFlight, give the splitter more CPU (splitter.cpu) or lower "
            "mirrorPercent"
        )

    def delay_remedy(self) -> str:
        """What to change when the measuring loop's own timestamp delay is too large."""
        if self.splitter_in_flight is None:
            return (
                "add load pods (spec.analysis.traffic.loadGenerator) or lower the stage's "
                "concurrency"
            )
        return (
            "give the splitter more CPU (spec.analysis.traffic.splitter.cpu, up to 1) or "
            "lower mirrorPercent"
        )


# Prompts traffic: the load pods' open-loop senders, at the fixed share.
LOAD_CLIENT_LIMIT = UnsentLimit()


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
    # Undecided on enough data because the interval holds the threshold (`judged`).
    close_call: bool = False


def judged(
    verdict: GateVerdict,
    reason: str,
    interval: Interval,
    threshold: float,
    baseline_value: float | None = None,
    candidate_value: float | None = None,
    units: int | None = None,
    enough_data: bool = True,
) -> Measurement:
    """A decided (or undecided) look that carries its interval's numbers into status.

    An undecided look on enough data whose interval holds the threshold is a close call:
    the estimate sits at the limit, and only more data or another limit decides it.
    `enough_data` is False where a gate holds its verdict back for its data minimum.
    """
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
        close_call=enough_data
        and verdict is GateVerdict.INCONCLUSIVE
        and math.isfinite(interval.lower)
        and math.isfinite(interval.upper)
        and interval.lower <= threshold <= interval.upper,
    )


def metric_error(source: MetricError) -> Measurement:
    """A failed metric source: verdict Error, with its message."""
    return Measurement(GateVerdict.ERROR, f"metric source {source.source}: {source.message}")


def relation(verdict: GateVerdict, higher_is_better: bool) -> str:
    """How a judged value stands against its threshold in a reason: passed, failed or `~`."""
    passed, failed = (">=", "<") if higher_is_better else ("<=", ">")
    return {GateVerdict.SUCCESSFUL: passed, GateVerdict.FAILED: failed}.get(verdict, "~")


def judge_client_timed(
    threshold: float,
    baseline: LatencySamples | MetricError | None,
    candidate: LatencySamples | MetricError | None,
    missing: str,
    judge: Callable[[LatencySamples, LatencySamples], Measurement],
    unsent: UnsentLimit,
) -> Measurement:
    """A client-timed gate's look: refused when a side's read failed (its error), a side
    has no samples yet (`missing`), a side's window is incomplete (`incomplete_window`) or
    mostly failures (`mostly_failed_window`), else `judge` on both sides; refused again if
    a side was offered less than the stage's load (`unequal_load`). One pipeline, so every
    client-timed gate refuses the same way."""
    for side in (baseline, candidate):
        if isinstance(side, MetricError):
            return metric_error(side)
    if not isinstance(baseline, LatencySamples) or not isinstance(candidate, LatencySamples):
        return Measurement(GateVerdict.INCONCLUSIVE, missing, threshold=threshold)
    measured = (
        incomplete_window(threshold, baseline, candidate)
        or mostly_failed_window(threshold, baseline, candidate)
        or judge(baseline, candidate)
    )
    return unequal_load(measured, baseline, candidate, unsent)


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


def skipped_share(side: LatencySamples, max_share: float) -> tuple[int, int] | None:
    """(skipped, offered) when a side's sender (open-loop load client, or the splitter)
    skipped over `max_share` of its arrivals in the window, else None. Offered counts the
    requests that ended in the window, so requests still in flight make the share a little
    larger, never smaller."""
    skipped = side.arrivals_skipped
    offered = skipped + side.requests_ok + side.requests_failed
    return (skipped, offered) if skipped > max_share * offered else None


# The verdict a lighter load would flatter the side into: less load, lower latency.
_FLATTERED = {"candidate": GateVerdict.SUCCESSFUL, "baseline": GateVerdict.FAILED}


def unequal_load(
    measured: Measurement,
    baseline: LatencySamples | None,
    candidate: LatencySamples | None,
    limit: UnsentLimit,
) -> Measurement:
    """`measured`, unless a side's sender fell behind the stage's load (`skipped_share`
    over `limit`) and the look's verdict is one that lighter load could explain.

    Why by direction: open-loop load is one Poisson schedule for both sides; a side that
    skipped arrivals was measured at less than the stage's load, which flatters it. A
    candidate that fell behind and still failed failed on evidence that favoured it, so
    the Failed stands; its pass does not. A baseline that fell behind makes the candidate
    look worse: its pass stands, its failure does not. The splitter sheds the same mirrored
    requests on both sides, so one side over the limit (the shares differ only by what is
    still in flight) refuses every verdict. A
    look that refuses names the side and the shortfall ("shadow load saturated"), as does
    an undecided one, so on call sees why a stage cannot decide and what to change; value
    and bounds stay, for the record.
    """
    if measured.verdict is GateVerdict.ERROR:
        return measured
    short = {
        name: found
        for name, side in zip(SATURATION_SIDES, (baseline, candidate), strict=True)
        if side is not None and (found := skipped_share(side, limit.max_share)) is not None
    }
    if not short:
        return measured
    suspect = {_FLATTERED[name] for name in short} | {GateVerdict.INCONCLUSIVE}
    if limit.splitter_in_flight is not None:
        # The splitter's sheds are the same requests on both sides; only the denominators
        # differ (a slower side has more still in flight), so one short side means both.
        suspect = {_FLATTERED[name] for name in SATURATION_SIDES} | suspect
    # Both short: name the side whose lighter load explains the verdict being refused.
    name = next((n for n in short if _FLATTERED[n] is measured.verdict), next(iter(short)))
    skipped, offered = short[name]
    why = limit.shortfall(name, skipped, offered)
    if measured.verdict not in suspect:  # a verdict against the flattered side stands
        return dataclasses.replace(measured, reason=f"{measured.reason}; {why}")
    refused = f"{why} ({measured.reason})"
    return dataclasses.replace(
        measured, verdict=GateVerdict.INCONCLUSIVE, reason=refused, close_call=False
    )
