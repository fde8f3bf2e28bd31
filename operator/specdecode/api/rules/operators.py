"""Operators, functions and quantifiers over rule expressions (see `expressions`).

The subset the rules need and both CEL dialects (the API server's and cel-python, which
the agreement test uses) treat alike: comparisons, `+`/`-`, `in`, `!`, `&&`/`||`, the
ternary, `size`, `matches`, `double`, `all` and `exists`. The rendered CEL stays
type-correct for the API server's checker (numbers are never mixed int/double) and regexes
avoid backslashes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specdecode.api.rules.expressions import Env, Expr, Has, Lit, at, cel_literal, truth

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "in": lambda a, b: a in b,
}


@dataclass(frozen=True)
class Binary(Expr):
    """`a <op> b` for comparisons, `+`, `-` and `in`."""

    op: str
    left: Expr
    right: Expr

    def cel(self) -> str:
        return f"({self.left.cel()} {self.op} {self.right.cel()})"

    def value(self, env: Env) -> Any:
        return _BINARY[self.op](self.left.value(env), self.right.value(env))


@dataclass(frozen=True)
class Not(Expr):
    """`!x`."""

    operand: Expr

    def cel(self) -> str:
        return f"!{self.operand.cel()}"

    def value(self, env: Env) -> bool:
        return not truth(self.operand.value(env))


@dataclass(frozen=True)
class Logic(Expr):
    """`a && b && ...` or `a || b || ...`, short-circuiting left to right as CEL does
    when the left side decides (the only way the rules use it)."""

    op: str  # "&&" or "||"
    operands: tuple[Expr, ...]

    def cel(self) -> str:
        return "(" + f" {self.op} ".join(operand.cel() for operand in self.operands) + ")"

    def value(self, env: Env) -> bool:
        decisive = self.op == "||"
        for operand in self.operands:
            if truth(operand.value(env)) == decisive:
                return decisive
        return not decisive


def all_of(*operands: Expr) -> Expr:
    """Every operand holds (`&&`)."""
    return operands[0] if len(operands) == 1 else Logic("&&", operands)


def any_of(*operands: Expr) -> Expr:
    """Some operand holds (`||`)."""
    return operands[0] if len(operands) == 1 else Logic("||", operands)


def not_both(first: str, second: str) -> Expr:
    """`!(has(self.first) && has(self.second))`: two fields that exclude each other (at
    most one set)."""
    return Not(all_of(Has(at(first)), Has(at(second))))


def implies(condition: Expr, consequence: Expr) -> Expr:
    """`condition ? consequence : true`: a ternary, so the consequence (which may read
    fields the condition guards) is never evaluated when the condition is false; an `||`
    would evaluate both sides in CEL and carry the error."""
    return Cond(condition, consequence, Lit(True))


@dataclass(frozen=True)
class Cond(Expr):
    """`c ? a : b`."""

    condition: Expr
    then: Expr
    otherwise: Expr

    def cel(self) -> str:
        return f"({self.condition.cel()} ? {self.then.cel()} : {self.otherwise.cel()})"

    def value(self, env: Env) -> Any:
        branch = self.then if truth(self.condition.value(env)) else self.otherwise
        return branch.value(env)


@dataclass(frozen=True)
class Call(Expr):
    """The few functions the rules need: size, matches, double."""

    name: str
    target: Expr
    argument: str | None = None  # the regex of `matches`

    def cel(self) -> str:
        if self.name == "matches":
            return f"{self.target.cel()}.matches({cel_literal(self.argument)})"
        return f"{self.name}({self.target.cel()})"

    def value(self, env: Env) -> Any:
        target = self.target.value(env)
        if self.name == "size":
            return len(target)
        if self.name == "double":
            return float(target)
        if self.name == "matches":
            return re.search(_re2_anchors(str(self.argument)), target) is not None
        raise ValueError(self.name)


def _re2_anchors(regex: str) -> str:
    """RE2's `$` matches only at the very end (Python's also before a final newline)."""
    return regex[:-1] + r"\Z" if regex.endswith("$") else regex


def size(target: Expr) -> Call:
    """`size(x)`."""
    return Call("size", target)


def matches(target: Expr, regex: str) -> Call:
    """`x.matches('regex')` (RE2 in the API server, `re` here: the rules use the subset
    both agree on)."""
    return Call("matches", target, regex)


def double(target: Expr) -> Call:
    """`double(x)`: the API server's CEL never compares an int with a double."""
    return Call("double", target)


@dataclass(frozen=True)
class Quantifier(Expr):
    """`list.all(v, body)` or `list.exists(v, body)`."""

    kind: str  # "all" or "exists"
    items: Expr
    var: str
    body: Expr

    def cel(self) -> str:
        return f"{self.items.cel()}.{self.kind}({self.var}, {self.body.cel()})"

    def value(self, env: Env) -> bool:
        results = (
            truth(self.body.value({**env, self.var: item})) for item in self.items.value(env)
        )
        return all(results) if self.kind == "all" else any(results)


def every(items: Expr, var: str, body: Expr) -> Quantifier:
    """`items.all(var, body)`."""
    return Quantifier("all", items, var, body)


def some(items: Expr, var: str, body: Expr) -> Quantifier:
    """`items.exists(var, body)`."""
    return Quantifier("exists", items, var, body)
