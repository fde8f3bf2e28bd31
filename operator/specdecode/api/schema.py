"""Turn pydantic's JSON Schema into a Kubernetes structural schema (OpenAPI v3.0 subset).

Why: the API server accepts only structural schemas (a `type` everywhere, no `$ref`, no
`anyOf` of types), which pydantic does not emit; this rewrites node by node and merges
per-class extras (CEL rules, list types) through a callback, knowing nothing of the resource.
The rewrites one by one: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Schema = dict[str, Any]
# Called with a `$defs` name and its converted schema; returns keys to merge into it.
Extension = Callable[[str, Schema], Mapping[str, Any]]

# Key order of emitted nodes: what a reader wants first, then constraints, then nesting.
KEY_ORDER = (
    "description",
    "type",
    "format",
    "enum",
    "default",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
)
# Keys copied from pydantic's schema as they are: the scalar ones of KEY_ORDER (up to
# `required`), but the exclusive bounds, which JSON Schema 2020-12 writes as numbers and
# OpenAPI v3 (the CRD's dialect) as booleans beside minimum/maximum (`_node` converts them).
COPIED_KEYS = frozenset(KEY_ORDER[: KEY_ORDER.index("required")]) - {
    "exclusiveMinimum",
    "exclusiveMaximum",
}


def _integer_safe_minimum(out: Schema) -> None:
    """Add a CEL rule that holds a fractional `minimum` for integer values too.

    Why: the API server's schema validator truncates a fractional minimum when the value
    is written as an integer (`minAlpha: 0` against `minimum: 0.05` compares 0 >= 0 and
    passes: measured on kube-apiserver 1.34), so a bound on a `number` field would let
    `0` or `1` through. CEL compares the value as the double it is. The bound is still
    written once, on the pydantic Field; this rule is generated from it. A fractional
    maximum needs nothing: truncating it only refuses more.
    """
    low = out.get("minimum")
    if not isinstance(low, float) or low.is_integer():
        return
    out["x-kubernetes-validations"] = [
        *out.get("x-kubernetes-validations", []),
        minimum_rule(low, strict=out.get("exclusiveMinimum") is True),
    ]


def minimum_rule(low: float, *, strict: bool) -> dict[str, str]:
    """The CEL rule (and its message) that holds a number field to `low`."""
    words = "greater than" if strict else "greater than or equal to"
    return {
        "rule": f"self {'>' if strict else '>='} {low!r}",
        "message": f"must be {words} {low:g}",
    }


class StructuralSchemaConverter:
    """Converts one pydantic JSON schema (with its `$defs`) to a structural schema."""

    def __init__(self, json_schema: Schema, extension: Extension | None = None) -> None:
        self._defs: Mapping[str, Schema] = json_schema.get("$defs", {})
        self._root = json_schema
        self._extension = extension
        self._drop_defaults = False

    def convert(self, *, drop_defaults: bool = False) -> Schema:
        """The structural schema of the root model (defaults dropped for status)."""
        self._drop_defaults = drop_defaults
        return self._node(self._root, def_name=_root_name(self._root))

    def _node(self, node: Schema, def_name: str | None = None) -> Schema:
        if "$ref" in node:
            ref_name = node["$ref"].rsplit("/", 1)[-1]
            inlined = self._node(self._defs[ref_name], def_name=ref_name)
            return _ordered({**inlined, **self._own_keys(node)})
        if "anyOf" in node:
            return self._optional(node)
        out: Schema = {key: value for key, value in node.items() if key in COPIED_KEYS}
        if self._drop_defaults:
            out.pop("default", None)
        if "exclusiveMinimum" in node:
            out["minimum"] = node["exclusiveMinimum"]
            out["exclusiveMinimum"] = True
        if "exclusiveMaximum" in node:
            out["maximum"] = node["exclusiveMaximum"]
            out["exclusiveMaximum"] = True
        if node.get("type") == "number":
            _integer_safe_minimum(out)
        if "const" in node and node.get("type") == "string":  # a one-value Literal
            out["enum"] = [node["const"]]
        if "enum" in out and node.get("type") == "string":
            out["maxLength"] = max(len(value) for value in out["enum"])
        if node.get("type") == "object":
            self._object(node, out)
        if node.get("type") == "array":
            out["items"] = self._node(node["items"])
        if def_name is not None and self._extension is not None:
            out.update(self._extension(def_name, out))
        return _ordered(out)

    def _object(self, node: Schema, out: Schema) -> None:
        properties = node.get("properties")
        if properties:
            out["properties"] = {name: self._node(child) for name, child in properties.items()}
            if node.get("required"):
                out["required"] = list(node["required"])
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            out["additionalProperties"] = self._node(extra)
        elif extra is True or not properties:
            out["x-kubernetes-preserve-unknown-fields"] = True

    def _optional(self, node: Schema) -> Schema:
        variants = [v for v in node["anyOf"] if v.get("type") != "null"]
        inner = self._node(variants[0]) if len(variants) == 1 else self._string_choices(variants)
        if inner is None:
            raise ValueError(
                f"only `X | None` unions, and unions of string enums and literals, map to a "
                f"structural schema: {node}"
            )
        merged = {**inner, **self._own_keys(node)}
        if merged.get("default", 0) is None or self._drop_defaults:
            merged.pop("default", None)
        return _ordered(merged)

    def _string_choices(self, variants: list[Schema]) -> Schema | None:
        """One string enum for a union of string enums and string literals (e.g. a method
        or "none"), or None when a variant is anything else."""
        values: list[str] = []
        for variant in variants:
            if variant.get("type") == "string" and "const" in variant:
                values.append(variant["const"])
                continue
            resolved = self._node(variant)
            if resolved.get("type") != "string" or "enum" not in resolved:
                return None
            values += resolved["enum"]
        return {"type": "string", "enum": values, "maxLength": max(len(v) for v in values)}

    def _own_keys(self, node: Schema) -> Schema:
        """Keys a referencing node sets for itself (its description and default)."""
        own: Schema = {key: node[key] for key in ("description", "default") if key in node}
        if own.get("default", 0) is None or self._drop_defaults:
            own.pop("default", None)
        return own


def _root_name(json_schema: Schema) -> str | None:
    title = json_schema.get("title")
    return title if isinstance(title, str) else None


def _ordered(node: Schema) -> Schema:
    known = [key for key in KEY_ORDER if key in node]
    unknown = sorted(key for key in node if key not in KEY_ORDER)
    return {key: node[key] for key in (*known, *unknown)}


def walk(schema: Schema, visit: Callable[[str, Schema], None], path: str = "") -> None:
    """Call `visit(path, node)` for every node of a structural schema (tests, checks)."""
    visit(path, schema)
    for name, child in schema.get("properties", {}).items():
        walk(child, visit, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        walk(schema["additionalProperties"], visit, f"{path}.*")
    if "items" in schema:
        walk(schema["items"], visit, f"{path}[*]")
