"""The stage look's load as the status writes it: the domain's summary to the wire, once.

Why here: the domain imports nothing from `api` (an import-linter contract), so a look's
`LoadSummary` (`domain.load_status`) travels in the `Decision` and apply puts it on the
stage run it was measured on, as `stages[].load`, before the status is compared and
written; the wire's bounds and names stay in `api`.
"""

from __future__ import annotations

from dataclasses import asdict

from specdecode.api.status import LoadStatus
from specdecode.domain.decision import Decision
from specdecode.domain.load_status import LoadSummary


def load_status_of(summary: LoadSummary | None) -> LoadStatus | None:
    """A look's load as status shows it (None: the look had no load windows)."""
    return None if summary is None else LoadStatus.model_validate(asdict(summary))


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
