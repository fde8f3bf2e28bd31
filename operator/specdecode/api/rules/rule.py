"""A rule: one expression, its message and where it points; a rule set per model.

`Rule.to_schema()` is the `x-kubernetes-validations` entry the CRD carries and
`RuleSet.violations()` is what the pydantic validators raise, both from one `Rule`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specdecode.api.rules.expressions import Expr, Missing, truth


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
            return truth(self.check.value({"self": obj}))
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

    def enforce(self, obj: Mapping[str, Any]) -> None:
        """Raise what a pydantic validator raises when `obj` breaks any rule: every
        broken rule's message, so one round trip names every problem."""
        problems = self.violations(obj)
        if problems:
            raise ValueError("; ".join(problems))
