"""Shared pydantic base classes for the resource's models.

Kubernetes fields are camelCase on the wire and snake_case in Python; one base class makes
that mapping (and the "reject what we don't know" policy) the same for every model, so the
CRD generated from them and the objects the operator parses can never disagree.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from specdecode.api.rules import RuleSet


class KubeModel(BaseModel):
    """A Kubernetes-style object: camelCase on the wire, unknown fields rejected, immutable.

    Frozen because a parsed spec is a value: the domain compares and hashes it, never edits it.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_enum_values=False,
    )

    def to_wire(self) -> dict[str, object]:
        """Serialise as the API server stores it: camelCase, no nulls."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class RuledModel(KubeModel):
    """A KubeModel with cross-field rules (`rules`): the same RuleSets the CRD carries as
    CEL (`validations.RULES`), enforced on parsing, in order, by one validator."""

    cross_field_rules: ClassVar[tuple[RuleSet, ...]] = ()

    @model_validator(mode="after")
    def _cross_field_rules_hold(self) -> Self:
        wire = self.to_wire()
        for rules in self.cross_field_rules:
            rules.enforce(wire)
        return self


class VerbatimModel(BaseModel):
    """A model whose field names are another program's (vLLM's JSON keys), kept verbatim."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_wire(self) -> dict[str, object]:
        """Serialise with the other program's own key names, no nulls."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def optional(description: str, **constraints: Any) -> Any:
    """A field absent unless set (default None), described, with its bounds if any
    (`ge`, `max_length`...): the shape of most status and many spec fields, spelt once so a
    model reads as its names, types and descriptions. The schema is that of
    `Field(default=None, description=..., **constraints)`, to the byte."""
    return Field(default=None, description=description, **constraints)


Section = TypeVar("Section", bound=BaseModel)


def section(model: type[Section], description: str) -> Any:
    """A nested model that may be left out, meaning all its defaults (`gpuPool`, `budget`):
    spelt once like `optional`. The schema is that of
    `Field(default_factory=model, description=...)`, to the byte."""
    return Field(default_factory=model, description=description)
