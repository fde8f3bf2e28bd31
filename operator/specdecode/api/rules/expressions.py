"""The expression nodes a rule reads the object with: paths, presence and literals.

Each node renders itself to CEL (`cel()`) and evaluates itself in Python (`value()`) side
by side, on purpose: a node whose two halves sit in one class cannot gain a case in one
language and not the other. Evaluation mirrors CEL's semantics where the rules rely on
them: a missing field is an error (`Missing`), and an error refuses the object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
        return cel_literal(self.literal)

    def value(self, env: Env) -> Any:
        return self.literal


def cel_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if "'" in value or "\\" in value:
            raise ValueError(f"literal needs escaping: {value!r}")
        return f"'{value}'"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(cel_literal(item) for item in value) + "]"
    raise TypeError(f"no CEL literal for {value!r}")


def lit(value: Any) -> Lit:
    """A literal expression."""
    return Lit(value)


def truth(value: Any) -> bool:
    """A CEL condition's value: a bool, else the error CEL would raise."""
    if not isinstance(value, bool):
        raise TypeError(f"not a bool: {value!r}")
    return value
