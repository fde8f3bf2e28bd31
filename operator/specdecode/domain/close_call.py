"""Close calls: a gate left undecided on enough data because its estimate sits at its limit.

Why: failing closed, a stage that ends undecided runs again or rolls back, and "undecided"
alone tells the user neither that the config missed by a hair nor what would have decided
it. A gate's look marks itself a close call (`gate_measures.judged`: enough data, interval
holding the threshold); this module words it once, for the stage's message (status and
Events) and for the gate table (`report`), with the estimate, its bounds and the limits
that would have decided either way. Nothing here changes a verdict.
"""

from __future__ import annotations

from specdecode.domain.gates import measure_for, registered_types
from specdecode.vocabulary import GateType

# Which way each gate type's limit points: a lower limit (the estimate must reach it) or an
# upper one (it must stay under it). Each gate's module says it (`higher_is_better`).
HIGHER_IS_BETTER: dict[GateType, bool] = {
    gate_type: measure_for(gate_type).higher_is_better for gate_type in registered_types()
}


def close_call_text(
    gate_type: GateType, value: float, lower: float, upper: float, threshold: float
) -> str:
    """ "close call: 1.391 [1.369, 1.401] against the limit 1.4; a limit of 1.401 or more
    would have passed it, one under 1.369 failed it" (for an upper limit; mirrored for a
    lower one). The limits are the interval's ends: where the bound the verdict rests on
    would have cleared the limit, or the opposite bound would have crossed it."""
    numbers = f"close call: {value:.3f} [{lower:.3f}, {upper:.3f}] against the limit {threshold:g}"
    if HIGHER_IS_BETTER[gate_type]:
        return (
            f"{numbers}; a limit of {lower:.3f} or less would have passed it, one over "
            f"{upper:.3f} failed it"
        )
    return (
        f"{numbers}; a limit of {upper:.3f} or more would have passed it, one under "
        f"{lower:.3f} failed it"
    )


def close_call_of(
    gate_type: GateType,
    close_call: bool,
    value: float | None,
    lower: float | None,
    upper: float | None,
    threshold: float | None,
) -> str | None:
    """The close call's words for a gate's latest result, or None when it is not one."""
    if not close_call or None in (value, lower, upper, threshold):
        return None
    assert value is not None and lower is not None and upper is not None
    assert threshold is not None
    return close_call_text(gate_type, value, lower, upper, threshold)
