"""Cross-field rules written once: each renders to CEL for the CRD and evaluates in Python.

A rule is a small expression tree over the object as the API server stores it (wire
names, defaults applied). `cel()` gives the `x-kubernetes-validations` text; `value()`
computes the same thing in Python for the pydantic models. So a rule cannot exist twice
in two spellings, and `kubectl apply` and the operator refuse the same objects with the
same message; tests/unit/api evaluates every rule the CRD carries with cel-python against
its Python verdict.

Modules: `expressions` (paths, presence, literals), `operators` (operators, functions,
quantifiers), `rule` (a rule and a model's rule set). The rules themselves live beside the
facts they come from: `speculative_rules`, `version_rules`, `workload`, `analysis_rules`.
"""

from __future__ import annotations

from specdecode.api.rules.expressions import (
    Env,
    Expr,
    Has,
    Index,
    Lit,
    Missing,
    Ref,
    at,
    lit,
)
from specdecode.api.rules.operators import (
    Binary,
    Call,
    Cond,
    Logic,
    Not,
    Quantifier,
    all_of,
    any_of,
    double,
    every,
    implies,
    matches,
    size,
    some,
)
from specdecode.api.rules.rule import Rule, RuleSet

__all__ = [
    "Binary",
    "Call",
    "Cond",
    "Env",
    "Expr",
    "Has",
    "Index",
    "Lit",
    "Logic",
    "Missing",
    "Not",
    "Quantifier",
    "Ref",
    "Rule",
    "RuleSet",
    "all_of",
    "any_of",
    "at",
    "double",
    "every",
    "implies",
    "lit",
    "matches",
    "size",
    "some",
]
