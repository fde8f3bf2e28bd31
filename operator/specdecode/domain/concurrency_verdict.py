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

from specdecode.api.analysis import AnalysisSpec
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.status import GateResult, StageStatus
from specdecode.api.tuning_rules import max_num_seqs
from specdecode.api.vllm_versions import effective_version, field_exists
from specdecode.domain.gates import measure_for
from specdecode.domain.tuning.recommend import schedule
from specdecode.domain.tuning.report import DEFAULT_MAX_BATCH
from specdecode.vocabulary import SCHEDULE, GateVerdict, StagePhase, TrafficSourceType


def _load_phrase(gate: GateResult) -> str | None:
    """How the verdict names a failed gate's figure, None when a lower load could not pass
    it (its measure's `load_phrase`: the latency gates)."""
    return measure_for(gate.type).load_phrase


@dataclass(frozen=True)
class LowerPass:
    """A latency failure at `failed_at` after stage `stage` passed at `passed_at` < it."""

    stage: str
    passed_at: int
    failed_at: int
    what: str  # "the tail", "the speedup" or both
    judged_there: bool = True  # the lower stage passed a gate of each failing type


def lower_pass(
    analysis: AnalysisSpec,
    stages: Sequence[StageStatus],
    index: int,
    failed: Sequence[GateResult],
) -> LowerPass | None:
    """The highest-concurrency earlier stage that passed, when a latency gate failed here.

    Only for Prompts-traffic stages with a closed-loop concurrency (open-loop or Mirror
    stages have no concurrency to compare) and only when a latency gate failed.
    """
    failing = [gate for gate in failed if _load_phrase(gate) is not None]
    here = analysis.stages[index].concurrency
    if not failing or here is None or analysis.traffic.source is TrafficSourceType.MIRROR:
        return None
    passed = [
        (spec.concurrency, spec.name, position)
        for position, (spec, status) in enumerate(
            zip(analysis.stages[:index], stages[:index], strict=False)
        )
        if spec.concurrency is not None
        and spec.concurrency < here
        and status.phase is StagePhase.SUCCESSFUL
    ]
    if not passed:
        return None
    concurrency, name, position = max(passed)
    what = " and ".join(dict.fromkeys(str(_load_phrase(gate)) for gate in failing))
    return LowerPass(name, concurrency, here, what, _passed_each_type(stages[position], failing))


def _passed_each_type(stage: StageStatus, failing: Sequence[GateResult]) -> bool:
    """Whether `stage` judged a gate of each failing gate's type Successful: only then did
    the config pay there on what fails here."""
    passed = {gate.type for gate in stage.gates if gate.verdict is GateVerdict.SUCCESSFUL}
    return all(gate.type in passed for gate in failing)


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
    spec: SpecDecodeRolloutSpec,
    candidate: SpeculativeConfig | None,
    stable_fingerprint: str | None,
    found: LowerPass | None,
) -> SpeculativeConfig | None:
    """The candidate speculating only up to the batch size that passed, or None: no lower
    pass, a release without the schedule (< 0.24), no k to keep, a schedule already (the
    offer is never offered again), nothing above the pass to turn off, or production runs
    that very config already."""
    if found is None or candidate is None or candidate.num_speculative_tokens is None:
        return None
    if candidate.num_speculative_tokens_per_batch_size is not None:
        return None
    engine = spec.engine
    if not field_exists(SCHEDULE, effective_version(engine.vllm_version, engine.image)):
        return None
    max_batch = max_num_seqs(spec.model.extra_args) or DEFAULT_MAX_BATCH
    if found.passed_at >= max_batch:
        return None
    k = candidate.num_speculative_tokens
    bands = [(1, found.passed_at), (found.passed_at + 1, max_batch)]
    entries = schedule([("kept", k, 1.0), ("off", 0, 1.0)], bands)
    wire = {**candidate.to_wire(), SCHEDULE: entries}
    offer = SpeculativeConfig.model_validate(wire)
    return None if offer.fingerprint() == stable_fingerprint else offer


def offer_text(offer: SpeculativeConfig | None, analyse: bool) -> str:
    """The offer in the verdict's message: what it is and how it gets analysed."""
    if offer is None:
        return ""
    entries = getattr(offer, SCHEDULE)
    how = (
        "analysing it now (analysis.scheduleFallback: Analyze)"
        if analyse
        else "set status.scheduleOffer as spec.speculative to have it analysed"
    )
    return (
        f"; offered: {SCHEDULE} {entries}, speculating only up to the lower stage's "
        f"concurrency: {how}"
    )
