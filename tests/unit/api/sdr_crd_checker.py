"""An offline stand-in for the API server's CRD validation, for unit tests.

It applies the schema's defaults, then checks types, enums, bounds, lengths, patterns,
required and unknown fields (as strict field validation does), list-map key uniqueness,
and evaluates every `x-kubernetes-validations` rule with cel-python. It is not the API
server (messages differ, and CEL cost is not estimated), but it tells whether the
generated schema and rules accept what the models accept and refuse what they refuse;
the e2e test repeats the same table against the real API server.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

Schema = dict[str, Any]


@dataclass(frozen=True)
class SchemaError:
    """One refusal: the path it names and why."""

    path: str
    message: str


def apply_defaults(schema: Schema, value: Any) -> Any:
    """Fill in defaults the way the API server does: absent fields, recursively."""
    if isinstance(value, dict):
        for name, child in schema.get("properties", {}).items():
            if name not in value and "default" in child:
                value[name] = copy.deepcopy(child["default"])
            if name in value:
                value[name] = apply_defaults(child, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                value[key] = apply_defaults(extra, value[key])
    if isinstance(value, list) and "items" in schema:
        return [apply_defaults(schema["items"], item) for item in value]
    return value


def _type_ok(kind: str | None, value: Any) -> bool:
    if kind is None:
        return True
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    python_types = {"string": str, "boolean": bool, "object": dict, "array": list}
    return isinstance(value, python_types[kind])


@dataclass
class CrdChecker:
    """Validates objects against one version's `openAPIV3Schema`."""

    schema: Schema
    _programs: dict[str, Any] = field(default_factory=dict)

    def errors(self, obj: dict[str, Any]) -> list[SchemaError]:
        """Everything wrong with `obj` after defaulting (empty: the API server would store it)."""
        defaulted = apply_defaults(self.schema, copy.deepcopy(obj))
        found: list[SchemaError] = []
        self._check(self.schema, defaulted, "", found)
        return [SchemaError(error.path.lstrip("."), error.message) for error in found]

    def _check(self, schema: Schema, value: Any, path: str, found: list[SchemaError]) -> None:
        if not _type_ok(schema.get("type"), value):
            found.append(SchemaError(path, f"expected {schema['type']}"))
            return
        self._scalar_bounds(schema, value, path, found)
        if isinstance(value, dict):
            self._object(schema, value, path, found)
        if isinstance(value, list):
            self._array(schema, value, path, found)
        for rule in schema.get("x-kubernetes-validations", []):
            if not self._holds(rule["rule"], value):
                where = path + rule.get("fieldPath", "")
                found.append(SchemaError(where, rule["message"]))

    def _scalar_bounds(
        self, schema: Schema, value: Any, path: str, found: list[SchemaError]
    ) -> None:
        problems = []
        if "enum" in schema and value not in schema["enum"]:
            problems.append("Unsupported value")
        if isinstance(value, int | float) and not isinstance(value, bool):
            low, high = schema.get("minimum"), schema.get("maximum")
            if low is not None and (
                value <= low if schema.get("exclusiveMinimum") else value < low
            ):
                problems.append(f"should be greater than {low}")
            if high is not None and (
                value >= high if schema.get("exclusiveMaximum") else value > high
            ):
                problems.append(f"should be less than {high}")
        if isinstance(value, str):
            if len(value) < schema.get("minLength", 0):
                problems.append("too short")
            if len(value) > schema.get("maxLength", len(value)):
                problems.append("too long")
            if "pattern" in schema and re.search(schema["pattern"], value) is None:
                problems.append("should match pattern")
        if isinstance(value, list):
            if len(value) < schema.get("minItems", 0):
                problems.append("too few items")
            if len(value) > schema.get("maxItems", len(value)):
                problems.append("too many items")
        found.extend(SchemaError(path, problem) for problem in problems)

    def _object(
        self, schema: Schema, value: dict[str, Any], path: str, found: list[SchemaError]
    ) -> None:
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                found.append(SchemaError(f"{path}.{name}", "Required value"))
        extra = schema.get("additionalProperties")
        for name, child in value.items():
            if name in properties:
                self._check(properties[name], child, f"{path}.{name}", found)
            elif isinstance(extra, dict):
                self._check(extra, child, f"{path}.{name}", found)
            elif properties and not schema.get("x-kubernetes-preserve-unknown-fields"):
                found.append(SchemaError(f"{path}.{name}", "unknown field"))

    def _array(self, schema: Schema, value: list[Any], path: str, found: list[SchemaError]) -> None:
        for index, item in enumerate(value):
            self._check(schema["items"], item, f"{path}[{index}]", found)
        if schema.get("x-kubernetes-list-type") == "map":
            keys = schema["x-kubernetes-list-map-keys"]
            seen: set[tuple[Any, ...]] = set()
            for index, item in enumerate(value):
                key = tuple(item.get(k) for k in keys)
                if key in seen:
                    found.append(SchemaError(f"{path}[{index}]", "Duplicate value"))
                seen.add(key)

    def _holds(self, rule: str, value: Any) -> bool:
        if rule not in self._programs:
            environment = celpy.Environment()
            self._programs[rule] = environment.program(environment.compile(rule))
        try:
            result = self._programs[rule].evaluate({"self": json_to_cel(value)})
        except CELEvalError:
            return False  # the API server also refuses an object whose rule errors
        return not isinstance(result, CELEvalError) and bool(result)
