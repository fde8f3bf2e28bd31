"""The stage look's load as the status writes it: the domain's summary on its stage run.

Why here: a look's `LoadSummary` (`domain.load_status`) travels in the `Decision` and
apply puts it on the stage run it was measured on, as `stages[].load` (the domain's
`LoadRecord`), before the state becomes the wire's status (`status_boundary`, which holds
it to the wire's bounds) and is compared and written.
"""

from __future__ import annotations

from dataclasses import asdict

from specdecode.domain.decision import Decision
from specdecode.domain.load_status import LoadSummary
from specdecode.domain.stage_state import LoadRecord


def load_status_of(summary: LoadSummary | None) -> LoadRecord | None:
    """A look's load as status shows it (None: the look had no load windows)."""
    return None if summary is None else LoadRecord.model_validate(asdict(summary))


def with_stage_load(decision: Decision) -> Decision:
    """`decision` with its look's load on the stage run the look measured (the same name,
    begun at the same instant); `decision` itself when it made no look."""
    look = decision.stage_load
    if look is None:
        return decision
    load = load_status_of(look.summary)
    stages = [
        stage.model_copy(update={"load": load})
        if stage.name == look.stage and stage.started_at == look.started_at
        else stage
        for stage in decision.status.stages
    ]
    return decision.with_status(decision.status.model_copy(update={"stages": stages}))
