"""Cross-field rules written once: each renders to CEL for the CRD and evaluates in Python.

Why: a rule cannot then exist twice in two spellings, and `kubectl apply` and the operator
refuse the same objects with the same message (tests/unit/api checks each CEL rule against
its Python verdict). Modules: `expressions`, `operators`, `rule`; the rules themselves live
beside the facts they come from. More: docs/internals.md.
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
    not_both,
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
    "not_both",
    "size",
    "some",
]
