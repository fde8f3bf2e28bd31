"""The resolved spec: a `workloadRef` rollout's `model` and `engine`, read from its source.

Why one place: everything after observe reads `model` and `engine`, so they are filled in
here once per reconcile into a validated `SpecDecodeRolloutSpec`, and no reader asks
whether a value was written or read. Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import ValidationError

from specdecode.api.adoption import WorkloadStatus
from specdecode.api.rollout import SpecDecodeRolloutSpec, WrittenRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.conditions import DEGRADED, compute_conditions
from specdecode.domain.decision import Decision, DesiredChildren, Event, EventType
from specdecode.domain.degraded import with_degraded
from specdecode.domain.source import SourceFacts
from specdecode.domain.transitions import NO_STAGE_RUNNING, Step, enter
from specdecode.vocabulary import Phase

UNAVAILABLE = "WorkloadUnavailable"
# A verdict was reached on a spec that could be resolved then: it stands.
_VERDICT_STANDS = frozenset({Phase.PROMOTING, Phase.PROMOTED, Phase.ROLLED_BACK})


def resolve_spec(
    written: WrittenRolloutSpec, facts: SourceFacts | str | None
) -> SpecDecodeRolloutSpec | str:
    """The spec with `model` and `engine` as written, else as the source states them; or
    what is missing. `facts`: the source's (None without a workloadRef; a string: why the
    source could not be read)."""
    wire = written.to_wire()
    name = "the spec" if written.workload_ref is None else f"Deployment/{written.workload_ref.name}"
    if written.model is None or written.engine is None:
        if not isinstance(facts, SourceFacts):
            return facts or f"{name}: model and engine are neither written nor read"
        name = facts.name
        missing: list[str] = []
        if written.model is None:
            if facts.model is None:
                missing.append("the model (no positional after serve, no --model): give model.name")
            else:
                wire["model"] = _model_wire(facts, facts.model)
        if written.engine is None:
            if facts.image is None:
                missing.append("the image: give engine.image")
            elif facts.vllm_version is None:
                missing.append(
                    f"the vLLM release (image {facts.image} has no :v0.Y.Z tag and the container "
                    "states none): give engine.image and engine.vllmVersion"
                )
            else:
                wire["engine"] = {
                    "image": facts.image,
                    "vllmVersion": facts.vllm_version,
                    "port": facts.port,
                }
        if missing:
            return f"{name}: its vLLM container does not state {'; '.join(missing)}"
    try:
        return SpecDecodeRolloutSpec.model_validate(wire)
    except ValidationError as error:
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in error.errors())
        return f"{name}: the spec completed from it is invalid: {problems}"


def _model_wire(facts: SourceFacts, model: str) -> dict[str, object]:
    wire: dict[str, object] = {"name": model}
    if facts.served_model_name is not None and facts.served_model_name != model:
        wire["servedModelName"] = facts.served_model_name
    if facts.revision is not None:
        wire["revision"] = facts.revision
    if facts.max_model_len is not None:
        wire["maxModelLen"] = facts.max_model_len
    return wire


def in_force(spec: SpecDecodeRolloutSpec, source: str) -> WorkloadStatus:
    """`status.workload` as the resolved spec has it: the source and the values in force."""
    return WorkloadStatus(
        source=source,
        image=spec.engine.image,
        model=spec.model.name,
        served_model_name=spec.model.served_name,
        vllm_version=spec.engine.effective_vllm_version,
    )


def decide_unresolved(
    status: SpecDecodeRolloutStatus, source: str, problem: str, generation: int, now: datetime
) -> Decision:
    """The decision while the spec cannot be resolved from its source (`problem`): no
    analysis, no shadows; Degraded (WorkloadUnavailable) naming what is missing, and one
    Warning Event per new problem."""
    text = f"{problem}; no analysis starts until it can be read"
    before = status.workload
    workload = WorkloadStatus(source=source, **_kept(before))
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


def _kept(before: WorkloadStatus | None) -> dict[str, object]:
    """What an unreadable source keeps of the last status: the owner's patch and Verified
    (a verdict's record), not values in force that can no longer be read."""
    if before is None:
        return {}
    return {"owner_patch": before.owner_patch, "verified_at": before.verified_at}
