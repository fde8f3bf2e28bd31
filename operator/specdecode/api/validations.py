"""Where the cross-field rules go in the CRD (`x-kubernetes-validations`).

Every rule is written once (`rules.Rule`, beside its model); this module only places it in
the CRD, keyed by model class name. Lists and strings a rule touches are bounded, so the
API server's CEL cost estimate stays far below its limits. More: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specdecode.api.adoption import ADOPTION_RULES
from specdecode.api.analysis_rules import ANALYSIS_RULES, SPEC_JUDGED_RULES, STAGE_RULES
from specdecode.api.gate_spec import GATE_RULES
from specdecode.api.guard import GUARD_RULES
from specdecode.api.rollout import ROOT_RULES as ROOT_RULE_SET
from specdecode.api.rollout import WRITTEN_SPEC_RULES
from specdecode.api.rules import Rule
from specdecode.api.schedule_reach import SCHEDULE_REACH_RULES
from specdecode.api.speculative import RULES as SPECULATIVE_RULES
from specdecode.api.traffic import TRAFFIC_RULES
from specdecode.api.workload import ENGINE_RULES, GPU_POOL_RULES, MODEL_RULES


@dataclass(frozen=True)
class CelRule:
    """An `x-kubernetes-validations` entry written as CEL text, for a rule the `rules` DSL
    cannot express (its Python twin is then a hand-written check, tested against it). The
    rollout's CRD has none; other resources' rule tables may."""

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


RULES: Mapping[str, tuple[Rule | CelRule, ...]] = {
    "SpeculativeConfig": tuple(SPECULATIVE_RULES.rules),
    "WrittenRolloutSpec": (
        *WRITTEN_SPEC_RULES.rules,
        *SPEC_JUDGED_RULES.rules,
        *SCHEDULE_REACH_RULES.rules,
        *ADOPTION_RULES.rules,
    ),
    "ModelSpec": tuple(MODEL_RULES.rules),
    "GpuPoolSpec": tuple(GPU_POOL_RULES.rules),
    "EngineSpec": tuple(ENGINE_RULES.rules),
    "StageSpec": tuple(STAGE_RULES.rules),
    "GateSpec": tuple(GATE_RULES.rules),
    "AnalysisSpec": tuple(ANALYSIS_RULES.rules),
    "TrafficSpec": tuple(TRAFFIC_RULES.rules),
    "GuardSpec": tuple(GUARD_RULES.rules),
}

# Rules on the whole object: only these may read `self.metadata.name`.
ROOT_RULES: tuple[Rule | CelRule, ...] = tuple(ROOT_RULE_SET.rules)

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
