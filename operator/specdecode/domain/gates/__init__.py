"""Gate evaluation: one look at a stage's observations yields a `Measurement`.

One module per gate type, found from `GateType`, behind the `GateMeasure` Protocol
(`registry`). Verdicts as Argo Rollouts names them: Successful when the confidence bound
clears the threshold, Failed when the opposite bound is past it, Inconclusive in between or
on too little data, Error when a metric source failed (never a pass). Each look spends a
group-sequential share of the error (`domain.sequential`). Pure and schema-free:
`domain.gate_boundary` converts to and from the wire schema. More: docs/internals.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from specdecode.domain.gate_measures import LOAD_CLIENT_LIMIT, Measurement, UnsentLimit
from specdecode.domain.gate_params import GateParams

# Re-exported: importing them from here guarantees every gate type's measure is registered.
from specdecode.domain.gates.registry import Headline as Headline
from specdecode.domain.gates.registry import Look, Need, require_registered
from specdecode.domain.gates.registry import TuningFigure as TuningFigure
from specdecode.domain.gates.registry import headline_type as headline_type
from specdecode.domain.gates.registry import is_headline as is_headline
from specdecode.domain.gates.registry import measure_for as measure_for
from specdecode.domain.gates.registry import registered_types as registered_types
from specdecode.domain.gates.registry import tuning_type as tuning_type
from specdecode.domain.observations import StageObservations
from specdecode.domain.sequential import critical_values, nominal_error, spent
from specdecode.vocabulary import GateVerdict, import_gate_modules

# One module per `GateType` member, `gates/<snake_case of its value>.py`, each registering
# its measure as it is imported: the enum is the list, none is kept here.
MODULES = require_registered(import_gate_modules(__name__))
MIN_LOOK_ERROR = 1e-12


@dataclass(frozen=True)
class LookPlan:
    """Where the look stands in its stage: what the error spending needs.

    `measured_seconds` of `max_seconds` give the information time; `runs` is how many times
    the stage may run (inconclusive re-runs + 1), each spending its share of the error.
    `method` is the rollout's speculative method as the wire names it (None: plain decoding).
    """

    measured_seconds: float
    max_seconds: float
    runs: int = 1
    method: str | None = None
    mirror: bool = False
    # The schedule may give k = 0 at this stage's load (at its concurrency; anywhere for a
    # requestRate stage): zero drafts there is the schedule's doing, not a finding.
    may_not_draft: bool = False
    # How much of its offered load a side may miss (Mirror through the splitter: its sheds).
    unsent: UnsentLimit = LOAD_CLIENT_LIMIT


def stage_needs(measured: Iterable[GateParams]) -> frozenset[Need]:
    """What to fetch for a stage: the union of what its measured gates declare.

    Measured: judged for this rollout (`api.certify`, dry-run gates included, they are
    measured and reported); the caller leaves out a gate not judged, which reads nothing.
    """
    return frozenset().union(*(measure_for(gate.type).needs(gate) for gate in measured))


def error_at_look(
    confidence: float, plan: LookPlan, earlier_seconds: Sequence[float], some_lost: bool
) -> float:
    """The one-sided error this look's bounds may have (see the module docstring).

    `earlier_seconds`: the measured seconds of this stage run's earlier looks still kept,
    oldest first; `some_lost`: more looks were taken than kept.
    """
    alpha = (1.0 - confidence) / max(1, plan.runs)
    horizon = max(plan.max_seconds, 1e-9)
    now = plan.measured_seconds / horizon
    if some_lost:
        # Older looks were dropped: spend only the increment since the last one kept. With
        # none kept (an edited or foreign status) what they spent is unknown: nothing left.
        last = earlier_seconds[-1] / horizon if earlier_seconds else None
        error = 0.0 if last is None else spent(alpha, now) - spent(alpha, last)
    else:
        times = (*(seconds / horizon for seconds in earlier_seconds), now)
        error = nominal_error(critical_values(times, alpha)[-1])
    # A look with nothing left to spend (the same time again) may still measure and report,
    # with bounds so wide (z ~ 7) that they decide nothing.
    return max(error, MIN_LOOK_ERROR)


def measure(
    gate: GateParams, observations: StageObservations | None, plan: LookPlan, error: float
) -> Measurement:
    """Look once at `error`: the registered measure of the gate's type, with the engines'
    cross-check beside its numbers (`GateMeasure.server_cross_check`); no observations is
    no data."""
    if observations is None:
        return Measurement(GateVerdict.INCONCLUSIVE, "no data for this stage yet")
    look = Look(error, plan.method, plan.mirror, plan.may_not_draft, plan.unsent)
    gate_measure = measure_for(gate.type)
    found = gate_measure.measure(gate, observations, look)
    if found.verdict is GateVerdict.ERROR:
        return found
    server_baseline, server_candidate = gate_measure.server_cross_check(gate, observations)
    return dataclasses.replace(
        found, server_baseline_value=server_baseline, server_candidate_value=server_candidate
    )
