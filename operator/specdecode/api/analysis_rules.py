"""The cross-field rules of `spec.analysis` and its stages, each written once (`rules`).

StageSpec and AnalysisSpec enforce them in their validators, and the CRD carries the same
rules as CEL (`validations`). They live apart from the models so `analysis` stays a
description of the fields; what Mirror traffic can judge is defined here once
(`mirror_judges`), from the gate types. Stage and gate names are unique by the CRD's
list-map keys (and the models' validators), not by a rule.
"""

from __future__ import annotations

from specdecode.api.gate_spec import GateType, ItlDefinition
from specdecode.api.rules import (
    Binary,
    Expr,
    Has,
    Not,
    Ref,
    Rule,
    RuleSet,
    all_of,
    any_of,
    at,
    every,
    implies,
    lit,
)
from specdecode.api.traffic import TrafficSourceType

MIRROR_GATES_MESSAGE = (
    "analysis.stages: with traffic source Mirror, mirrored responses never reach the "
    "operator, so only Acceptance gates and TailLatency gates with itlDefinition ServerStep "
    "can be judged, besides AcceptedLength gates (Speedup and ErrorRate gates are kept but not "
    "judged)"
)

# Gate types Mirror traffic admits but cannot judge (they need the responses' timings or
# outcomes): kept, reported as not judged, never enforced.
MIRROR_NOT_JUDGED = (GateType.SPEEDUP, GateType.ERROR_RATE)


def mirror_judges(gate: Ref) -> Expr:
    """Whether the gate at `gate` (wire form) is allowed with Mirror traffic.

    Why Speedup and ErrorRate are allowed: the default stages carry them, and a CRD default
    cannot depend on the traffic source; the domain reports them as not judged under Mirror
    (`MIRROR_NOT_JUDGED`). An unset
    itlDefinition is allowed because it means ServerStep under Mirror.
    """
    server_side = [GateType.ACCEPTANCE, GateType.ACCEPTED_LENGTH, *MIRROR_NOT_JUDGED]
    return any_of(
        Binary("in", gate["type"], lit([gate_type.value for gate_type in server_side])),
        all_of(
            Binary("==", gate["type"], lit(GateType.TAIL_LATENCY.value)),
            any_of(
                Not(Has(gate["itlDefinition"])),
                Binary("==", gate["itlDefinition"], lit(ItlDefinition.SERVER_STEP.value)),
            ),
        ),
    )


STAGE_RULES = RuleSet(
    (
        Rule(
            Not(all_of(Has(at("concurrency")), Has(at("requestRate")))),
            "stage: set exactly one of concurrency or requestRate",
            ".concurrency",
        ),
        Rule(
            Binary(">=", at("maxDurationSeconds"), at("minDurationSeconds")),
            "stage: maxDurationSeconds must be >= minDurationSeconds",
            ".maxDurationSeconds",
        ),
    )
)

_MIRROR = TrafficSourceType.MIRROR.value
_STAGE, _GATE = Ref("s"), Ref("g")
ANALYSIS_RULES = RuleSet(
    (
        Rule(
            implies(
                Binary("!=", at("traffic.source"), lit(_MIRROR)),
                every(
                    at("stages"),
                    "s",
                    any_of(Has(_STAGE["concurrency"]), Has(_STAGE["requestRate"])),
                ),
            ),
            "stage: set exactly one of concurrency or requestRate (the load of Prompts traffic)",
            ".stages",
            "FieldValueRequired",
        ),
        Rule(
            implies(
                Binary("==", at("traffic.source"), lit(_MIRROR)),
                every(at("stages"), "s", every(_STAGE["gates"], "g", mirror_judges(_GATE))),
            ),
            MIRROR_GATES_MESSAGE,
            ".stages",
        ),
    )
)
