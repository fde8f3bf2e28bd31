"""The resolved spec: a `workloadRef` rollout's `model` and `engine`, read from its source.

Why one place: everything after observe reads `model` and `engine`, so they are filled in
once per reconcile (`completion`, the rules: the written value wins, a missing one is
named) into a validated spec (`reconciler.source_boundary` builds it), and no reader asks
whether a value was written or read. Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from specdecode.domain.conditions import DEGRADED, compute_conditions
from specdecode.domain.decision import Decision, DesiredChildren, Event, EventType
from specdecode.domain.degraded import with_degraded
from specdecode.domain.rollout_settings import RolloutSettings
from specdecode.domain.rollout_state import RolloutState, WorkloadRecord
from specdecode.domain.source import SourceFacts
from specdecode.domain.transitions import NO_STAGE_RUNNING, Step, enter
from specdecode.vocabulary import Phase

UNAVAILABLE = "WorkloadUnavailable"
# A verdict was reached on a spec that could be resolved then: it stands.
_VERDICT_STANDS = frozenset({Phase.PROMOTING, Phase.PROMOTED, Phase.ROLLED_BACK})


@dataclass(frozen=True)
class Completion:
    """What the source fills in of a written spec: `named` says whose values the spec then
    holds (a problem with the completed spec names it); `model`, `engine`: the facts they
    are taken from (None: as written)."""

    named: str
    model: SourceFacts | None = None
    engine: SourceFacts | None = None


def completion(
    model_written: bool, engine_written: bool, ref: str | None, facts: SourceFacts | str | None
) -> Completion | str:
    """What fills in the spec's `model` and `engine`: as written, else as the source states
    them; or what is missing. `ref`: the workloadRef's Deployment (None: none); `facts`: the
    source's (None without a workloadRef; a string: why the source could not be read)."""
    name = "the spec" if ref is None else f"Deployment/{ref}"
    if model_written and engine_written:
        return Completion(name)
    if not isinstance(facts, SourceFacts):
        return facts or f"{name}: model and engine are neither written nor read"
    missing: list[str] = []
    if not model_written and facts.model is None:
        missing.append("the model (no positional after serve, no --model): give model.name")
    if not engine_written:
        if facts.image is None:
            missing.append("the image: give engine.image")
        elif facts.vllm_version is None:
            missing.append(
                f"the vLLM release (image {facts.image} has no :v0.Y.Z tag and the container "
                "states none): give engine.image and engine.vllmVersion"
            )
    if missing:
        return f"{facts.name}: its vLLM container does not state {'; '.join(missing)}"
    return Completion(
        facts.name,
        model=None if model_written else facts,
        engine=None if engine_written else facts,
    )


def in_force(settings: RolloutSettings, source: str) -> WorkloadRecord:
    """`status.workload` as the resolved spec has it: the source and the values in force."""
    return WorkloadRecord(
        source=source,
        image=settings.image,
        model=settings.model_name,
        served_model_name=settings.served_name,
        vllm_version=settings.vllm_version,
    )


def decide_unresolved(
    status: RolloutState, source: str, problem: str, generation: int, now: datetime
) -> Decision:
    """The decision while the spec cannot be resolved from its source (`problem`): no
    analysis, no shadows; Degraded (WorkloadUnavailable) naming what is missing, and one
    Warning Event per new problem."""
    text = f"{problem}; no analysis starts until it can be read"
    before = status.workload
    workload = WorkloadRecord(source=source, **_kept(before))
    status = status.model_copy(update={"workload": workload})
    said = next((c for c in status.conditions if c.type == DEGRADED), None)
    known = said is not None and (said.reason, said.message) == (UNAVAILABLE, text)
    if known:
        step = Step(status)
    elif status.phase in _VERDICT_STANDS:
        step = Step(status, (Event(UNAVAILABLE, text, EventType.WARNING),))
    else:
        step = enter(
            status,
            Phase.PENDING,
            now,
            UNAVAILABLE,
            text,
            warning=True,
            candidate_speculative=None,  # the next analysis starts clean once it is read
            candidate_fingerprint=None,
            stages=[],
            **NO_STAGE_RUNNING,
        )
    final = step.status.model_copy(update={"observed_generation": generation})
    final = final.model_copy(
        update={"conditions": compute_conditions(final, False, generation, now)}
    )
    final = with_degraded(status, final, UNAVAILABLE, text, now)
    return Decision(
        status=final,
        children=DesiredChildren(production=final.stable_speculative),
        events=step.events,
    )


def _kept(before: WorkloadRecord | None) -> dict[str, object]:
    """What an unreadable source keeps of the last status: the owner's patch and Verified
    (a verdict's record), not values in force that can no longer be read."""
    if before is None:
        return {}
    return {"owner_patch": before.owner_patch, "verified_at": before.verified_at}
