"""Cross-field rules the API server enforces, as CEL (`x-kubernetes-validations`).

The speculative, engine, model and GPU-pool rules are written once (`rules.Rule`, in the
modules of their models): the models evaluate them and this module only places them in
the CRD. The others are still CEL text here beside a pydantic validator that mirrors
them, so `kubectl apply` refuses what the operator would refuse, with a message that names
the field; tests/unit/api checks both against one table.
Rules are keyed by the model class name (the `$defs` name in pydantic's JSON schema);
`self` is that object. Every list and string a rule touches has maxItems/maxLength in the
models, so the API server's CEL cost estimate stays far below its limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic.alias_generators import to_camel

from specdecode.api.gate_spec import GATE_FIELDS, MIRROR_GATES_MESSAGE, GateType
from specdecode.api.rollout import MAX_NAME_LENGTH, NAME_PATTERN, SPEC_RULES
from specdecode.api.rules import Rule
from specdecode.api.speculative import RULES as SPECULATIVE_RULES
from specdecode.api.traffic import PROMPTS_ONLY_FIELDS
from specdecode.api.workload import ENGINE_RULES, GPU_POOL_RULES, MODEL_RULES


@dataclass(frozen=True)
class CelRule:
    """One `x-kubernetes-validations` entry."""

    rule: str
    message: str
    field_path: str | None = None
    reason: str | None = None  # FieldValueInvalid (default), ...Forbidden, ...Required

    def to_schema(self) -> dict[str, str]:
        """The entry as the CRD spells it."""
        entry = {"rule": self.rule, "message": self.message}
        if self.field_path is not None:
            entry["fieldPath"] = self.field_path
        if self.reason is not None:
            entry["reason"] = self.reason
        return entry


def _cel_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(f"'{value}'" for value in sorted(values)) + "]"


def _gate_rules() -> tuple[CelRule, ...]:
    """One rule per type-specific field: it may be set only on the types that use it."""
    every_field = sorted(set().union(*GATE_FIELDS.values()))
    rules = []
    for field in every_field:
        types = [gate_type.value for gate_type in GateType if field in GATE_FIELDS[gate_type]]
        wire = to_camel(field)
        rules.append(
            CelRule(
                f"!has(self.{wire}) || self.type in {_cel_list(types)}",
                f"gate {wire} applies only to type {' or '.join(sorted(types))}",
                f".{wire}",
                "FieldValueForbidden",
            )
        )
    return tuple(rules)


def _analysis_rules() -> tuple[CelRule, ...]:
    """Rules that join the traffic source with the stages it must feed."""
    server_side = (
        "g.type in ['Acceptance', 'AcceptedLength', 'Speedup'] || (g.type == 'TailLatency' && "
        "(!has(g.itlDefinition) || g.itlDefinition == 'ServerStep'))"
    )
    return (
        CelRule(
            "self.traffic.source == 'Mirror' || "
            "self.stages.all(s, has(s.concurrency) || has(s.requestRate))",
            "stage: set exactly one of concurrency or requestRate (the load of Prompts traffic)",
            ".stages",
            "FieldValueRequired",
        ),
        CelRule(
            f"self.traffic.source != 'Mirror' || self.stages.all(s, s.gates.all(g, {server_side}))",
            MIRROR_GATES_MESSAGE,
            ".stages",
        ),
    )


# Rules written once (`rules.Rule`: the models evaluate the same objects) and rules still
# kept as CEL text beside a pydantic validator (`CelRule`).
RULES: Mapping[str, tuple[CelRule | Rule, ...]] = {
    "SpeculativeConfig": tuple(SPECULATIVE_RULES.rules),
    "SpecDecodeRolloutSpec": tuple(SPEC_RULES.rules),
    "ModelSpec": tuple(MODEL_RULES.rules),
    "GpuPoolSpec": tuple(GPU_POOL_RULES.rules),
    "EngineSpec": tuple(ENGINE_RULES.rules),
    "StageSpec": (
        CelRule(
            "!(has(self.concurrency) && has(self.requestRate))",
            "stage: set exactly one of concurrency or requestRate",
            ".concurrency",
        ),
        CelRule(
            "self.maxDurationSeconds >= self.minDurationSeconds",
            "stage: maxDurationSeconds must be >= minDurationSeconds",
            ".maxDurationSeconds",
        ),
    ),
    "GateSpec": _gate_rules(),
    "AnalysisSpec": _analysis_rules(),
    "TrafficSpec": (
        CelRule(
            "!(has(self.configMapRef) && has(self.secretRef))",
            "traffic: set at most one of configMapRef and secretRef",
            ".secretRef",
            "FieldValueForbidden",
        ),
        CelRule(
            "self.source != 'Mirror' || has(self.httpRoute)",
            "traffic: source Mirror needs httpRoute",
            ".httpRoute",
            "FieldValueRequired",
        ),
        CelRule(
            "self.source != 'Prompts' || !has(self.httpRoute)",
            "traffic: httpRoute applies only to source Mirror",
            ".httpRoute",
            "FieldValueForbidden",
        ),
        *(
            CelRule(
                f"self.source != 'Mirror' || !has(self.{to_camel(field)})",
                f"traffic: {to_camel(field)} apply only to source Prompts",
                f".{to_camel(field)}",
                "FieldValueForbidden",
            )
            for field in PROMPTS_ONLY_FIELDS
        ),
    ),
}

# Rules on the whole object: only these may read `self.metadata.name`.
ROOT_RULES = (
    CelRule(
        f"self.metadata.name.size() <= {MAX_NAME_LENGTH} && "
        f"self.metadata.name.matches('{NAME_PATTERN.pattern}')",
        f"metadata.name must be a DNS-1035 label of at most {MAX_NAME_LENGTH} characters "
        "(children append -candidate)",
    ),
)

# Lists whose items are unique by name: the API server rejects duplicates itself.
LIST_MAP_KEYS: Mapping[str, Mapping[str, str]] = {
    "AnalysisSpec": {"stages": "name"},
    "StageSpec": {"gates": "name"},
}


# Status lists the operator (and other status writers) merge by key.
STATUS_LIST_MAP_KEYS: Mapping[str, Mapping[str, str]] = {
    "SpecDecodeRolloutStatus": {"conditions": "type"},
}


def extend_definition(def_name: str, node: Mapping[str, Any]) -> dict[str, Any]:
    """Keys to add to the converted spec schema of model `def_name` (`schema.Extension`)."""
    extra = _list_maps(LIST_MAP_KEYS.get(def_name, {}), node)
    rules = RULES.get(def_name, ())
    if rules:
        extra["x-kubernetes-validations"] = [rule.to_schema() for rule in rules]
    return extra


def extend_status_definition(def_name: str, node: Mapping[str, Any]) -> dict[str, Any]:
    """Keys to add to the status schema: list types only, never CEL.

    Status is written by the operator alone, from specs that already passed validation; a
    rule there could only ever block the operator from reporting what is true.
    """
    return _list_maps(STATUS_LIST_MAP_KEYS.get(def_name, {}), node)


def _list_maps(list_keys: Mapping[str, str], node: Mapping[str, Any]) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if list_keys:
        properties = dict(node["properties"])
        for list_field, key in list_keys.items():
            properties[list_field] = {
                **properties[list_field],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": [key],
            }
        extra["properties"] = properties
    return extra
