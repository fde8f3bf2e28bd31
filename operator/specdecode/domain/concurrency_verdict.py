"""What a rollback on latency says about concurrency: it paid lower down, it fails here.

Why: a config can pass at concurrency 4 and stretch the P99 stall at 32; a bare "p99-itl
failed" reads as "the config is bad". The verdict names both concurrencies, places the
break-even between them only if the lower stage passed a gate of the failing type, and on
vLLM >= 0.24 offers a per-batch-size schedule up to the one that passed
(`status.scheduleOffer`). Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specdecode.domain.analysis_plan import AnalysisPlan
from specdecode.domain.gates import measure_for
from specdecode.domain.tuning.recommend import schedule
from specdecode.domain.tuning.report import DEFAULT_MAX_BATCH
from specdecode.vocabulary import SCHEDULE, GateType, StagePhase


def _load_phrase(gate_type: GateType) -> str | None:
    """How the verdict names a failed gate's figure, None when a lower load could not pass
    it (its measure's `load_phrase`: the latency gates)."""
    return measure_for(gate_type).load_phrase


@dataclass(frozen=True)
class StageOutcome:
    """A stage run as the verdict reads it: its phase and the types of its gates judged
    Successful."""

    phase: StagePhase
    passed: frozenset[GateType]


@dataclass(frozen=True)
class LowerPass:
    """A latency failure at `failed_at` after stage `stage` passed at `passed_at` < it."""

    stage: str
    passed_at: int
    failed_at: int
    what: str  # "the tail", "the speedup" or both
    judged_there: bool = True  # the lower stage passed a gate of each failing type


def lower_pass(
    plan: AnalysisPlan,
    stages: Sequence[StageOutcome],
    index: int,
    failed: Sequence[GateType],
) -> LowerPass | None:
    """The highest-concurrency earlier stage that passed, when a latency gate (`failed`:
    the failed gates' types) failed here.

    Only for Prompts-traffic stages with a closed-loop concurrency (open-loop or Mirror
    stages have no concurrency to compare) and only when a latency gate failed.
    """
    failing = [gate_type for gate_type in failed if _load_phrase(gate_type) is not None]
    here = plan.stages[index].concurrency
    if not failing or here is None or plan.mirror:
        return None
    passed = [
        (spec.concurrency, spec.name, position)
        for position, (spec, status) in enumerate(
            zip(plan.stages[:index], stages[:index], strict=False)
        )
        if spec.concurrency is not None
        and spec.concurrency < here
        and status.phase is StagePhase.SUCCESSFUL
    ]
    if not passed:
        return None
    concurrency, name, position = max(passed)
    what = " and ".join(dict.fromkeys(str(_load_phrase(gate_type)) for gate_type in failing))
    return LowerPass(name, concurrency, here, what, _passed_each_type(stages[position], failing))


def _passed_each_type(stage: StageOutcome, failing: Sequence[GateType]) -> bool:
    """Whether `stage` judged a gate of each failing gate's type Successful: only then did
    the config pay there on what fails here."""
    return all(gate_type in stage.passed for gate_type in failing)


def lower_pass_text(found: LowerPass | None) -> str:
    """'; it passed stage a at concurrency 4 but fails the tail at concurrency 32 (break-even
    above 4, at or below 32)', or ''."""
    if found is None:
        return ""
    if not found.judged_there:
        return (
            f"; it passed stage {found.stage} at concurrency {found.passed_at}, which did not "
            f"judge {found.what}, and fails {found.what} at concurrency {found.failed_at} "
            f"(break-even not measured: at or below {found.failed_at})"
        )
    return (
        f"; it passed stage {found.stage} at concurrency {found.passed_at} but fails "
        f"{found.what} at concurrency {found.failed_at} (break-even above {found.passed_at}, "
        f"at or below {found.failed_at})"
    )


def schedule_offer(
    plan: AnalysisPlan, k: int | None, scheduled: bool, found: LowerPass | None
) -> list[list[int]] | None:
    """The candidate's per-batch-size schedule speculating only up to the batch size that
    passed (its k kept below, off above), or None: no lower pass, a release without the
    schedule (< 0.24), no k to keep, a schedule already (`scheduled`: the offer is never
    offered again) or nothing above the pass to turn off. The caller drops an offer
    production runs already (a config's fingerprint is the api's)."""
    if found is None or k is None or scheduled or not plan.with_schedule:
        return None
    max_batch = plan.max_batch or DEFAULT_MAX_BATCH
    if found.passed_at >= max_batch:
        return None
    bands = [(1, found.passed_at), (found.passed_at + 1, max_batch)]
    return schedule([("kept", k, 1.0), ("off", 0, 1.0)], bands)


def offer_text(entries: list[list[int]] | None, analyse: bool) -> str:
    """The offer (its schedule `entries`) in the verdict's message: what it is and how it
    gets analysed."""
    if entries is None:
        return ""
    how = (
        "analysing it now (analysis.scheduleFallback: Analyze)"
        if analyse
        else "set status.scheduleOffer as spec.speculative to have it analysed"
    )
    return (
        f"; offered: {SCHEDULE} {entries}, speculating only up to the lower stage's "
        f"concurrency: {how}"
    )
