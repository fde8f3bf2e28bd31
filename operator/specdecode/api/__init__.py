"""The resource contract: pydantic models of SpecDecodeRollout spec and status.

These models are the single source of truth: the CRD in `crds/` and in the Helm chart is
generated from them (`make crds`), and CI fails when the two drift (`make verify-crds`).
"""

from __future__ import annotations

from specdecode.api.analysis import AnalysisSpec, StageSpec, default_stages
from specdecode.api.gate_spec import GateSpec, GateType, ItlDefinition, SpeedupMetric
from specdecode.api.rollout import (
    ACTION_ANNOTATION,
    ACTIONS,
    API_VERSION,
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    SpecDecodeRollout,
    SpecDecodeRolloutSpec,
    WrittenRolloutSpec,
)
from specdecode.api.speculative import SpeculativeConfig, SpeculativeMethod
from specdecode.api.status import (
    Condition,
    ConditionStatus,
    GateResult,
    GateVerdict,
    MirrorStatus,
    Phase,
    SpecDecodeRolloutStatus,
    StagePhase,
    StageStatus,
)
from specdecode.api.traffic import MirrorPairing, TrafficSourceType, TrafficSpec
from specdecode.api.workload import EngineSpec, GpuPoolSpec, ModelSpec, ServingSpec

__all__ = [
    "ACTIONS",
    "ACTION_ANNOTATION",
    "API_VERSION",
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "AnalysisSpec",
    "Condition",
    "ConditionStatus",
    "EngineSpec",
    "GateResult",
    "GateSpec",
    "GateType",
    "GateVerdict",
    "GpuPoolSpec",
    "ItlDefinition",
    "MirrorPairing",
    "MirrorStatus",
    "ModelSpec",
    "Phase",
    "ServingSpec",
    "SpecDecodeRollout",
    "SpecDecodeRolloutSpec",
    "SpecDecodeRolloutStatus",
    "SpeculativeConfig",
    "SpeculativeMethod",
    "SpeedupMetric",
    "StagePhase",
    "StageSpec",
    "StageStatus",
    "TrafficSourceType",
    "TrafficSpec",
    "WrittenRolloutSpec",
    "default_stages",
]
