"""The decided state back across the boundary: the domain's state in, the wire's out.

The domain decides on its own frozen `RolloutState` (`domain.rollout_state`), never the
wire's `SpecDecodeRolloutStatus`, so a second API version does not reach into the rules
(issue 35). The two hold the same fields under the same names, so each direction is one
validation by attribute but for the speculative configs (`CONFIG_FIELDS`), each
converted by `adapters.speculative_boundary`: `observe.state_of` once per reconcile on the
stored status, and `status_of` here once, in apply, before the status write, the metrics
and the Events read the wire model (two modules, so each is entered once per reconcile).
"""

from __future__ import annotations

from specdecode.adapters.speculative_boundary import config_of
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.rollout_state import CONFIG_FIELDS, RolloutState


def status_of(state: RolloutState) -> SpecDecodeRolloutStatus:
    """The decided state as the wire's status, validated as the CRD validates it."""
    fields = {name: getattr(state, name) for name in type(state).model_fields}
    fields.update({name: config_of(getattr(state, name)) for name in CONFIG_FIELDS})
    return SpecDecodeRolloutStatus.model_validate(fields, from_attributes=True)
