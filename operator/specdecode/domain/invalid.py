"""A spec the operator cannot parse: Failed with reason InvalidSpec, production untouched.

The API server's schema and CEL rules reject most bad input; what only the operator can
tell (a rule the schema cannot express, a status or spec from an older version) lands
here. The rollout shows it as phase Failed with the Degraded and Stalled conditions
carrying reason InvalidSpec and the validation message, and one Warning Event per new
problem (not one per reconcile). A new generation of the spec is parsed again; from Failed,
`decide` then resumes work toward the desired config.
"""

from __future__ import annotations

from datetime import datetime

from specdecode.domain.conditions import compute_conditions
from specdecode.domain.decision import Decision, DesiredChildren
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.transitions import NO_STAGE_RUNNING, Step, enter
from specdecode.vocabulary import Phase

INVALID_SPEC = "InvalidSpec"


def decide_invalid_spec(
    status: RolloutState, message: str, generation: int, now: datetime
) -> Decision:
    """The decision for a spec that failed validation with `message`."""
    text = f"invalid spec: {message}"
    already = status.phase is Phase.FAILED and status.reason == INVALID_SPEC
    if already and status.message == text:
        step = Step(status)
    else:
        step = enter(
            status,
            Phase.FAILED,
            now,
            INVALID_SPEC,
            text,
            warning=True,
            **NO_STAGE_RUNNING,
        )
    final = step.status.model_copy(update={"observed_generation": generation})
    production_ready = False  # not observed: Ready is False in Failed anyway
    final = final.model_copy(
        update={"conditions": compute_conditions(final, production_ready, generation, now)}
    )
    return Decision(
        status=final,
        children=DesiredChildren(production=final.stable_speculative),
        events=step.events,
    )
