"""The cross-field rules of `spec.analysis` and its stages, each written once (`rules`).

The models enforce them in validators and the CRD carries them as CEL. Fail closed: a
stage that can never judge anything, or whose request timeout outlasts its minimum
duration, is refused. Apart from the models so `analysis` stays a description of fields.
More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Callable

from specdecode.api import rules as r
from specdecode.api.certify import (
    SPEC,
    admitted_under,
    applies_to_method,
    enforced,
    for_every_method,
    judged_by,
    judged_by_source,
)
from specdecode.api.gate_spec import GateType
from specdecode.api.traffic import TrafficSourceType, server_side_mirror

MIRROR_GATES_MESSAGE = (
    "analysis.stages: with traffic source Mirror and mirrorPairing ServerSide, mirrored "
    "responses never reach the "
    "operator, so only Acceptance, AcceptedLength, ErrorRate (from vLLM's request-outcome "
    "counter) and TailLatency gates with itlDefinition ServerStep can be judged (Speedup "
    "gates are kept but not judged)"
)
MIRROR_LATENCY_MESSAGE = (
    "analysis.stages: with traffic source Mirror and mirrorPairing ServerSide, some stage "
    "needs an enforced TailLatency "
    "gate (not dryRun, not failOnly, no methods filter): Speedup cannot be judged on "
    "mirrored traffic, and acceptance alone never shows that the candidate is not slower"
)

MIRROR_ERRORS_MESSAGE = (
    "analysis.stages: with traffic source Mirror and mirrorPairing ServerSide, some stage "
    "needs an enforced ErrorRate "
    "gate (not dryRun, not failOnly, no methods filter), judged from vLLM's "
    "vllm:request_success_total: without one a candidate failing mirrored requests could "
    "be promoted, since their responses never reach the operator"
)

NOTHING_ENFORCED_MESSAGE = (
    "analysis.stages: every stage needs a gate that is neither dryRun nor failOnly: a stage "
    "passes only on an enforced gate's evidence, so gates: [] or only dryRun and failOnly "
    "gates could never pass (manual analyses excepted)"
)
MIRROR_NOTHING_JUDGED_MESSAGE = (
    "analysis.stages: with traffic source Mirror and mirrorPairing ServerSide, every stage "
    "needs an enforced gate it can judge (Acceptance, AcceptedLength, ErrorRate or "
    "TailLatency; Speedup is not judged without responses)"
)


def not_manual(analysis: r.Ref) -> r.Expr:
    """The analysis enforces its gates (`manual` unset or false)."""
    return r.any_of(
        r.Not(r.Has(analysis["manual"])), r.Binary("==", analysis["manual"], r.lit(False))
    )


def enforced_gate_of(gate_type: GateType, gate: r.Ref) -> r.Expr:
    """Whether the gate at `gate` (wire form) is an enforced `gate_type` gate judged for
    every method (`certify`'s clauses 2, 5 and 6).

    Why every method: a `methods` filter that leaves out the rollout's method makes the gate
    "not applicable", and this rule lives on the analysis, which does not see the method.
    """
    return r.all_of(
        r.Binary("==", gate["type"], r.lit(gate_type.value)), enforced(gate), for_every_method(gate)
    )


def enforced_tail_gate(gate: r.Ref) -> r.Expr:
    """Whether the gate at `gate` is an enforced TailLatency gate for every method."""
    return enforced_gate_of(GateType.TAIL_LATENCY, gate)


def enforced_error_gate(gate: r.Ref) -> r.Expr:
    """Whether the gate at `gate` is an enforced ErrorRate gate for every method."""
    return enforced_gate_of(GateType.ERROR_RATE, gate)


TIMEOUT_MESSAGE = (
    "analysis.traffic.requestTimeoutSeconds must be below every stage's minDurationSeconds "
    "(Prompts traffic): a request hung longer than a stage's minimum ends as a timeout only "
    "after the stage may have passed, so the hang would never count against it"
)


def timeout_within_stages(analysis: r.Ref) -> r.Expr:
    """Whether the request timeout of the operator's own requests (load pods', the
    splitter's) is below every stage's minimum duration (ServerSide Mirror traffic sends
    no request of the operator's: no timeout applies)."""
    return r.implies(
        r.Not(server_side_mirror(analysis["traffic"])),
        r.every(
            analysis["stages"],
            "s",
            r.Binary(
                "<",
                r.double(analysis["traffic"]["requestTimeoutSeconds"]),
                r.double(r.Ref("s")["minDurationSeconds"]),
            ),
        ),
    )


def _mirror_needs_some(gate_kind: Callable[[r.Ref], r.Expr], message: str) -> r.Rule:
    """An enforced (not manual) Mirror analysis has, in some stage, a gate of `gate_kind`."""
    return r.Rule(
        r.implies(
            r.all_of(not_manual(r.Ref("self")), server_side_mirror(r.at("traffic"))),
            r.some(r.at("stages"), "s", r.some(r.Ref("s")["gates"], "g", gate_kind(r.Ref("g")))),
        ),
        message,
        ".stages",
        "FieldValueRequired",
    )


STAGE_RULES = r.RuleSet(
    (
        r.Rule(
            r.not_both("concurrency", "requestRate"),
            "stage: set exactly one of concurrency or requestRate",
            ".concurrency",
        ),
        r.Rule(
            r.Binary(">=", r.at("maxDurationSeconds"), r.at("minDurationSeconds")),
            "stage: maxDurationSeconds must be >= minDurationSeconds",
            ".maxDurationSeconds",
        ),
    )
)

_MIRROR_T = TrafficSourceType.MIRROR
_MIRROR = _MIRROR_T.value
_STAGE, _GATE = r.Ref("s"), r.Ref("g")
ANALYSIS_RULES = r.RuleSet(
    (
        r.Rule(
            r.implies(
                r.Binary("!=", r.at("traffic.source"), r.lit(_MIRROR)),
                r.every(
                    r.at("stages"),
                    "s",
                    r.any_of(r.Has(_STAGE["concurrency"]), r.Has(_STAGE["requestRate"])),
                ),
            ),
            "stage: set exactly one of concurrency or requestRate (the load of Prompts traffic)",
            ".stages",
            "FieldValueRequired",
        ),
        r.Rule(
            r.implies(
                server_side_mirror(r.at("traffic")),
                r.every(
                    r.at("stages"),
                    "s",
                    r.every(_STAGE["gates"], "g", admitted_under(_GATE, TrafficSourceType.MIRROR)),
                ),
            ),
            MIRROR_GATES_MESSAGE,
            ".stages",
        ),
        # Mirror never promotes on alpha alone: the only latency it can judge must be
        # enforced somewhere (a Mirror rollout whose histogram gate cannot decide rolls back
        # Inconclusive, which is the fail-closed answer).
        _mirror_needs_some(enforced_tail_gate, MIRROR_LATENCY_MESSAGE),
        # Mirror never promotes without an error check: its responses never reach us, so
        # only an enforced ErrorRate gate (on the engines' counters) can fail on errors.
        _mirror_needs_some(enforced_error_gate, MIRROR_ERRORS_MESSAGE),
        # Fail closed: a stage that can never judge anything is refused, with the reason.
        # Whether a gate applies to the rollout's method is a rule on the spec (`rollout`).
        r.Rule(
            r.implies(
                not_manual(r.Ref("self")),
                r.every(r.at("stages"), "s", r.some(_STAGE["gates"], "g", enforced(_GATE))),
            ),
            NOTHING_ENFORCED_MESSAGE,
            ".stages",
        ),
        r.Rule(
            r.implies(
                r.all_of(not_manual(r.Ref("self")), server_side_mirror(r.at("traffic"))),
                r.every(
                    r.at("stages"),
                    "s",
                    r.some(
                        _STAGE["gates"],
                        "g",
                        r.all_of(enforced(_GATE), judged_by(_GATE, _MIRROR_T)),
                    ),
                ),
            ),
            MIRROR_NOTHING_JUDGED_MESSAGE,
            ".stages",
        ),
        r.Rule(
            timeout_within_stages(r.Ref("self")), TIMEOUT_MESSAGE, ".traffic.requestTimeoutSeconds"
        ),
    )
)

NOTHING_APPLIES_MESSAGE = (
    "analysis.stages: every stage needs an enforced gate that applies to speculative.method "
    "(gates[].methods lists it, or none for plain decoding, or is unset) and, with "
    "ServerSide Mirror traffic, one it can judge: "
    "otherwise the stage judges nothing and could never pass"
)


# On the rollout's spec (`self` is the spec: the method and the stages meet there).
SPEC_JUDGED_RULES = r.RuleSet(
    (
        r.Rule(
            r.implies(
                r.all_of(r.Has(r.at("analysis")), not_manual(r.at("analysis"))),
                r.every(
                    r.at("analysis.stages"),
                    "s",
                    r.some(
                        _STAGE["gates"],
                        "g",
                        r.all_of(
                            enforced(_GATE),
                            applies_to_method(_GATE, SPEC),
                            judged_by_source(_GATE, SPEC),
                        ),
                    ),
                ),
            ),
            NOTHING_APPLIES_MESSAGE,
            ".analysis.stages",
        ),
    )
)
