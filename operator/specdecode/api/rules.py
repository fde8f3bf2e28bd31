"""Cross-field rules written once: each renders to CEL for the CRD and evaluates in Python.

A rule is a small expression tree over the object as the API server stores it (wire
names, defaults applied). `cel()` gives the `x-kubernetes-validations` text; `value()`
computes the same thing in Python for the pydantic models. So a rule cannot exist twice
in two spellings, and `kubectl apply` and the operator refuse the same objects with the
same message. The few node types mirror CEL's semantics (a missing field is an error, an
error refuses the object); tests/unit/api evaluates the rendered CEL with cel-python
against the Python verdicts over a table. The rendered CEL stays type-correct for the API
server's checker (numbers are never mixed int/double) and regexes avoid backslashes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Env = Mapping[str, Any]


class Missing(Exception):
    """A field read that CEL would refuse with "no such key"."""


class Expr:
    """A CEL expression that can also be evaluated in Python."""

    def cel(self) -> str:
        """The expression in CEL."""
        raise NotImplementedError

    def value(self, env: Env) -> Any:
        """The expression's value for `env` (`self` and bound loop variables)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Ref(Expr):
    """`self.a.b` or `item[0]`: a path from a root name through fields and indexes."""

    root: str
    path: tuple[str | int, ...] = ()

    def cel(self) -> str:
        text = self.root
        for part in self.path:
            text += f"[{part}]" if isinstance(part, int) else f".{part}"
        return text

    def value(self, env: Env) -> Any:
        current = env[self.root]
        for part in self.path:
            try:
                current = current[part]
            except (KeyError, IndexError, TypeError):
                raise Missing(self.cel()) from None
        return current

    def __getitem__(self, part: str | int) -> Ref:
        return Ref(self.root, (*self.path, part))


@dataclass(frozen=True)
class Index(Expr):
    """`list[i]` with a computed index (a loop variable, `i - 1`)."""

    target: Expr
    index: Expr

    def cel(self) -> str:
        return f"{self.target.cel()}[{self.index.cel()}]"

    def value(self, env: Env) -> Any:
        target, index = self.target.value(env), self.index.value(env)
        if not isinstance(index, int) or not 0 <= index < len(target):
            raise Missing(self.cel())
        return target[index]


def at(dotted: str) -> Ref:
    """`at("speculative.model")` is `self.speculative.model`."""
    return Ref("self", tuple(dotted.split(".")))


@dataclass(frozen=True)
class Has(Expr):
    """`has(self.a.b)`: the last field is set (its parents must exist)."""

    ref: Ref

    def cel(self) -> str:
        return f"has({self.ref.cel()})"

    def value(self, env: Env) -> bool:
        parent = Ref(self.ref.root, self.ref.path[:-1]).value(env)
        return isinstance(parent, Mapping) and parent.get(self.ref.path[-1]) is not None


@dataclass(frozen=True)
class Lit(Expr):
    """A literal: string, bool, int, float or a list of those."""

    literal: Any

    def cel(self) -> str:
        return _cel_literal(self.literal)

    def value(self, env: Env) -> Any:
        return self.literal


def _cel_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if "'" in value or "\\" in value:
            raise ValueError(f"literal needs escaping: {value!r}")
        return f"'{value}'"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_cel_literal(item) for item in value) + "]"
    raise TypeError(f"no CEL literal for {value!r}")


def lit(value: Any) -> Lit:
    """A literal expression."""
    return Lit(value)


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
        return not _truth(self.operand.value(env))


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
            if _truth(operand.value(env)) == decisive:
                return decisive
        return not decisive


def all_of(*operands: Expr) -> Expr:
    """Every operand holds (`&&`)."""
    return operands[0] if len(operands) == 1 else Logic("&&", operands)


def any_of(*operands: Expr) -> Expr:
    """Some operand holds (`||`)."""
    return operands[0] if len(operands) == 1 else Logic("||", operands)


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
        branch = self.then if _truth(self.condition.value(env)) else self.otherwise
        return branch.value(env)


@dataclass(frozen=True)
class Call(Expr):
    """The few functions the rules need: size, matches, double."""

    name: str
    target: Expr
    argument: str | None = None  # the regex of `matches`

    def cel(self) -> str:
        if self.name == "matches":
            return f"{self.target.cel()}.matches({_cel_literal(self.argument)})"
        return f"{self.name}({self.target.cel()})"

    def value(self, env: Env) -> Any:
        target = self.target.value(env)
        if self.name == "size":
            return len(target)
        if self.name == "double":
            return float(target)
        if self.name == "matches":
            return re.search(str(self.argument), target) is not None
        raise ValueError(self.name)


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
            _truth(self.body.value({**env, self.var: item})) for item in self.items.value(env)
        )
        return all(results) if self.kind == "all" else any(results)


def every(items: Expr, var: str, body: Expr) -> Quantifier:
    """`items.all(var, body)`."""
    return Quantifier("all", items, var, body)


def some(items: Expr, var: str, body: Expr) -> Quantifier:
    """`items.exists(var, body)`."""
    return Quantifier("exists", items, var, body)


def _truth(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"not a bool: {value!r}")
    return value


@dataclass(frozen=True)
class Rule:
    """One `x-kubernetes-validations` entry and the Python check that is the same rule."""

    check: Expr
    message: str
    field_path: str | None = None
    reason: str | None = None  # FieldValueInvalid (default), ...Forbidden, ...Required

    def holds(self, obj: Mapping[str, Any]) -> bool:
        """Whether `obj` (wire form, defaults applied) passes; an error refuses, as in CEL."""
        try:
            return _truth(self.check.value({"self": obj}))
        except (Missing, TypeError, IndexError):
            return False

    def to_schema(self) -> dict[str, str]:
        """The entry as the CRD spells it."""
        entry = {"rule": self.check.cel(), "message": self.message}
        if self.field_path is not None:
            entry["fieldPath"] = self.field_path
        if self.reason is not None:
            entry["reason"] = self.reason
        return entry


@dataclass(frozen=True)
class RuleSet:
    """The rules of one model (one `$defs` name), in a fixed order."""

    rules: Sequence[Rule] = field(default_factory=tuple)

    def violations(self, obj: Mapping[str, Any]) -> list[str]:
        """Messages of the rules `obj` breaks, in order."""
        return [rule.message for rule in self.rules if not rule.holds(obj)]
