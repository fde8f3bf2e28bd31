"""The SpecDecodeTuning rules the API server enforces (CEL), written once where possible.

Candidates reuse the rollout's version rules re-bound to a loop variable; the ladder,
traffic and budget rules are here, with a Python mirror where the rules DSL cannot express
one (`budget_pays_one_look`, `max_num_seqs`). Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from specdecode.api import engine_args
from specdecode.api import rules as r
from specdecode.api.analysis import default_stages
from specdecode.api.rollout import SPEC_RULES
from specdecode.api.speculative_rules import SCHEDULE
from specdecode.api.validations import CelRule, extend_definition

MAX_LADDER_INDEX = 12  # = tuning.MAX_LADDER (the loop bound of the ascending rule)
LADDER_MESSAGE = "concurrencyLadder must be strictly ascending"
BUDGET_MESSAGE = (
    "budget.maxGpuSeconds must pay for one trial's first look: "
    "2 x gpuPool.gpusPerReplica x (trial.warmupSeconds + trial.lookSeconds)"
)
BUDGET_CEL = (
    "self.budget.maxGpuSeconds >= 2 * self.gpuPool.gpusPerReplica * "
    "(self.trial.warmupSeconds + self.trial.lookSeconds)"
)
# The winner's rollout (`apply: true`) and each trial's rendered spec run the default
# stages, so the tuning's timeout must fit them as a rollout's must fit its stages.
SHORTEST_DEFAULT_STAGE = min(stage.min_duration_seconds for stage in default_stages())
TIMEOUT_MESSAGE = (
    f"traffic.requestTimeoutSeconds must be below {SHORTEST_DEFAULT_STAGE} s, the default "
    "stages' shortest minDurationSeconds (the winner's rollout runs them): a request hung "
    "longer than a stage's minimum would never count against it"
)
CANDIDATES = r.at("searchSpace.candidates")
_SPECULATIVE = r.Ref("self", ("speculative",))


def _rebind(expr: r.Expr) -> r.Expr:
    """`self.speculative.x` -> `c.x`; `has(self.speculative)` -> true (the loop has one)."""
    if isinstance(expr, r.Has) and expr.ref == _SPECULATIVE:
        return r.lit(True)
    if isinstance(expr, r.Ref):
        if expr.root == "self" and expr.path[:1] == ("speculative",):
            return r.Ref("c", expr.path[1:])
        return expr
    changes: dict[str, object] = {}
    for field in dataclasses.fields(expr):  # type: ignore[arg-type]
        value = getattr(expr, field.name)
        if isinstance(value, r.Expr):
            changes[field.name] = _rebind(value)
        elif isinstance(value, tuple) and value and isinstance(value[0], r.Expr):
            changes[field.name] = tuple(_rebind(item) for item in value)
    return dataclasses.replace(expr, **changes)  # type: ignore[type-var]


def _per_candidate(rule: r.Rule) -> r.Rule:
    check = r.implies(r.Has(CANDIDATES), r.every(CANDIDATES, "c", _rebind(rule.check)))
    return r.Rule(check, f"searchSpace.candidates: {rule.message}", ".searchSpace.candidates")


def _ladder_ascends() -> r.Rule:
    ladder = r.at("concurrencyLadder")
    i = r.Ref("i")
    following = r.Binary("+", i, r.lit(1))
    return r.Rule(
        r.every(
            r.lit(list(range(MAX_LADDER_INDEX - 1))),
            "i",
            r.implies(
                r.Binary("<", following, r.size(ladder)),
                r.Binary("<", r.Index(ladder, i), r.Index(ladder, following)),
            ),
        ),
        LADDER_MESSAGE,
        ".concurrencyLadder",
    )


def _no_schedule_in_candidates() -> r.Rule:
    return r.Rule(
        r.implies(
            r.Has(CANDIDATES), r.every(CANDIDATES, "c", r.Not(r.Has(r.Ref("c", (SCHEDULE,)))))
        ),
        f"searchSpace.candidates: {SCHEDULE} is derived by the tuning, not searched",
        ".searchSpace.candidates",
        "FieldValueForbidden",
    )


def _count(ref: r.Ref) -> r.Expr:
    return r.Cond(r.Has(ref), r.size(ref), r.lit(0))


SEARCH_SPACE_RULES = r.RuleSet(
    (
        r.Rule(
            r.Binary(
                ">=", r.Binary("+", _count(r.at("candidates")), _count(r.at("grids"))), r.lit(1)
            ),
            "searchSpace: name at least one candidate or grid",
            None,
            "FieldValueRequired",
        ),
    )
)
TRIAL_RULES = r.RuleSet(
    (
        r.Rule(
            r.Binary("<=", r.at("lookSeconds"), r.at("maxSeconds")),
            "trial.lookSeconds must be <= trial.maxSeconds",
            ".lookSeconds",
        ),
    )
)
SPEC_RULES_TUNING = r.RuleSet(
    (
        r.Rule(
            r.Binary("==", r.at("traffic.source"), r.lit("Prompts")),
            "traffic.source must be Prompts: a trial sets its own concurrency",
            ".traffic.source",
        ),
        r.Rule(
            r.Binary(
                "<",
                r.double(r.at("traffic.requestTimeoutSeconds")),
                r.lit(float(SHORTEST_DEFAULT_STAGE)),
            ),
            TIMEOUT_MESSAGE,
            ".traffic.requestTimeoutSeconds",
        ),
        _ladder_ascends(),
        _no_schedule_in_candidates(),
        *(_per_candidate(rule) for rule in SPEC_RULES.rules),
    )
)
# Integer lists whose items must be unique: the API server refuses duplicates itself.
SET_LISTS = {
    "SearchGrid": ("numSpeculativeTokens", "promptLookupMax"),
    "SpecDecodeTuningSpec": ("concurrencyLadder",),
}


def budget_pays_one_look(gpus_per_replica: int, warmup: int, look: int, budget: int) -> bool:
    """The Python side of BUDGET_CEL."""
    return budget >= 2 * gpus_per_replica * (warmup + look)


def max_num_seqs(extra_args: Sequence[str]) -> int | None:
    """The `--max-num-seqs` the engine is started with, if model.extraArgs sets it: read as
    vLLM reads it (`--max_num_seqs 64`, `--max-num-seqs=64`; the last one wins)."""
    value = engine_args.last_value(extra_args, "--max-num-seqs")
    return int(value) if value is not None and value.isdigit() else None


# Rules keyed by the model class name (`$defs`), as `validations.RULES` keys the rollout's.
TUNING_RULES: dict[str, tuple[r.Rule | CelRule, ...]] = {
    "SearchSpace": tuple(SEARCH_SPACE_RULES.rules),
    "TrialSpec": tuple(TRIAL_RULES.rules),
    "SpecDecodeTuningSpec": (
        *SPEC_RULES_TUNING.rules,
        CelRule(BUDGET_CEL, BUDGET_MESSAGE, ".budget.maxGpuSeconds"),
    ),
}


def extend_tuning_definition(def_name: str, node: Mapping[str, Any]) -> dict[str, Any]:
    """`schema.Extension` for the tuning's spec: shared models keep the rollout's rules."""
    if def_name not in TUNING_RULES and def_name not in SET_LISTS:
        return extend_definition(def_name, node)
    extra: dict[str, Any] = {}
    if def_name in SET_LISTS:
        properties = dict(node["properties"])
        for name in SET_LISTS[def_name]:
            properties[name] = {**properties[name], "x-kubernetes-list-type": "set"}
        extra["properties"] = properties
    rules = TUNING_RULES.get(def_name, ())
    if rules:
        extra["x-kubernetes-validations"] = [rule.to_schema() for rule in rules]
    return extra
