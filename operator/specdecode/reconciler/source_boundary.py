"""Where a `workloadRef` rollout's written spec and its source's facts become the resolved
spec: the wire model every step after observe reads, built once a reconcile.

Why here: which value wins and what is missing are the domain's rules
(`domain.source_spec.completion`, on domain types); this module only spells the values
it chose as the wire spec and has the API validate it. Pure conversion, no I/O.
"""

from __future__ import annotations

from pydantic import ValidationError

from specdecode.api.rollout import SpecDecodeRolloutSpec, WrittenRolloutSpec
from specdecode.domain.source import SourceFacts
from specdecode.domain.source_spec import completion


def resolve_spec(
    written: WrittenRolloutSpec, facts: SourceFacts | str | None
) -> SpecDecodeRolloutSpec | str:
    """The spec with `model` and `engine` as written, else as the source states them; or
    what is missing. `facts`: the source's (None without a workloadRef; a string: why the
    source could not be read)."""
    ref = None if written.workload_ref is None else written.workload_ref.name
    filled = completion(written.model is not None, written.engine is not None, ref, facts)
    if isinstance(filled, str):
        return filled
    wire = written.to_wire()
    if filled.model is not None and filled.model.model is not None:
        wire["model"] = _model_wire(filled.model, filled.model.model)
    if filled.engine is not None:
        wire["engine"] = {
            "image": filled.engine.image,
            "vllmVersion": filled.engine.vllm_version,
            "port": filled.engine.port,
        }
    try:
        return SpecDecodeRolloutSpec.model_validate(wire)
    except ValidationError as error:
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in error.errors())
        return f"{filled.named}: the spec completed from it is invalid: {problems}"


def _model_wire(facts: SourceFacts, model: str) -> dict[str, object]:
    wire: dict[str, object] = {"name": model}
    if facts.served_model_name is not None and facts.served_model_name != model:
        wire["servedModelName"] = facts.served_model_name
    if facts.revision is not None:
        wire["revision"] = facts.revision
    if facts.max_model_len is not None:
        wire["maxModelLen"] = facts.max_model_len
    return wire
